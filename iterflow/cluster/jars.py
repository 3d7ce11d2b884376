"""JVM jars for GraphFrames: fetched from Maven Central with ``mvn`` into a project-local cache.

``graphframes-py`` carries no JVM code, so its jar must be on ``spark.jars``. The most
common GraphFrames failure is a Python package and a jar of different releases; we check
that here, once, with one clear message, instead of letting py4j fail later.
"""
from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
from importlib import metadata
from pathlib import Path

from iterflow.errors import IterflowError

log = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
POM = PROJECT_ROOT / "jars" / "pom.xml"
GRAPHFRAMES_ARTIFACT = "io.graphframes:graphframes-spark4_2.13"
_JAR_RE = re.compile(r"^graphframes-spark(?P<spark>\d)_(?P<scala>2\.1\d)-(?P<version>[0-9][^-]*)\.jar$")


class GraphFramesUnavailable(IterflowError):
    """The GraphFrames jar is missing or does not match the Python package."""


def jar_dir() -> Path:
    """Where jars are cached: ``$ITERFLOW_JARS`` or ``<project>/.cache/jars``."""
    return Path(os.environ.get("ITERFLOW_JARS", PROJECT_ROOT / ".cache" / "jars"))


def pinned_graphframes_version() -> str:
    """The graphframes-py version installed (the jar must be the same release)."""
    try:
        return metadata.version("graphframes-py")
    except metadata.PackageNotFoundError as exc:  # pragma: no cover - install problem
        raise GraphFramesUnavailable("graphframes-py is not installed; run `make setup`") from exc


def packages_coordinate() -> str:
    """The ``--packages`` coordinate for users' own clusters (spark-submit resolves it)."""
    return f"{GRAPHFRAMES_ARTIFACT}:{pinned_graphframes_version()}"


def fetch(dest: Path | None = None) -> list[Path]:
    """Resolve the GraphFrames jar and its runtime dependencies with Maven into ``dest``.

    Raises :class:`GraphFramesUnavailable` naming the coordinate when Maven cannot resolve it.
    """
    dest = dest or jar_dir()
    dest.mkdir(parents=True, exist_ok=True)
    if shutil.which("mvn") is None:
        raise GraphFramesUnavailable("`mvn` not found: install Maven to fetch GraphFrames jars")
    cmd = [
        "mvn", "-q", "-B", "-f", str(POM), "dependency:copy-dependencies",
        f"-Dgraphframes.version={pinned_graphframes_version()}",
        f"-DoutputDirectory={dest}", "-DincludeScope=runtime",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        reason = next((ln for ln in proc.stdout.splitlines() if "Could not" in ln or "ERROR" in ln), "")
        raise GraphFramesUnavailable(
            f"Maven could not resolve {packages_coordinate()}: {reason.strip()[:300]}"
        )
    return graphframes_jars(dest)


def graphframes_jars(dest: Path | None = None) -> list[Path]:
    """The cached jars after checking that the GraphFrames jar matches graphframes-py."""
    dest = dest or jar_dir()
    jars = sorted(dest.glob("*.jar")) if dest.is_dir() else []
    found = [m for m in (_JAR_RE.match(j.name) for j in jars) if m]
    if not found:
        raise GraphFramesUnavailable(
            f"no GraphFrames jar in {dest}; run `make jars` (or pass "
            f"--packages {packages_coordinate()} to spark-submit)"
        )
    check_match(found[0].group("version"), found[0].group("spark"))
    return jars


def check_match(jar_version: str, jar_spark_major: str) -> None:
    """Fail with one message when the jar and the Python package are different releases."""
    import pyspark

    py_version = pinned_graphframes_version()
    spark_major = pyspark.__version__.split(".")[0]
    if jar_version != py_version or jar_spark_major != spark_major:
        raise GraphFramesUnavailable(
            f"GraphFrames mismatch: graphframes-py {py_version} with pyspark {pyspark.__version__} "
            f"needs {GRAPHFRAMES_ARTIFACT.replace('spark4', 'spark' + spark_major)}:{py_version}, "
            f"but the jar is graphframes-spark{jar_spark_major} {jar_version}; run `make jars`"
        )


def available() -> bool:
    """True when a matching GraphFrames jar is cached (features that need it are enabled)."""
    try:
        graphframes_jars()
        return True
    except GraphFramesUnavailable:
        return False


def main() -> int:
    """``python -m iterflow.cluster.jars``: fetch the jars; exit 1 with one message when impossible."""
    try:
        jars = fetch()
    except GraphFramesUnavailable as exc:
        print(f"iterflow: GraphFrames JVM code not available: {exc}")
        return 1
    print("\n".join(str(j) for j in jars))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
