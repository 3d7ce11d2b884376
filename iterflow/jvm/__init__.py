"""iterflow's own JVM classes: built from the ``.java`` sources next to this file, loaded at run time.

* ``BarrierListener`` (:mod:`iterflow.observe.listener`): barrier statistics pushed by Spark's
  listener bus; lives in the driver only.
* ``IndexCoalescer`` (:mod:`iterflow.loop.hashed`): coalesces a hash-partitioned frame into a
  divisor of its partition count without a shuffle; serialized into tasks, so executors need it.

One jar, built with ``javac`` against the pyspark jars (``make setup`` does it; otherwise the
first session that wants it, ~3 s) into the jar cache, named by the sources' hash. The driver
loads it through a class loader of its own (no ``spark.jars``/``--driver-class-path``, works
under ``spark-submit`` too) and ships it to executors with ``SparkContext.addJar`` when a class
the tasks deserialize is first wanted. Where no ``javac`` is found or a class does not load,
:func:`load_class` returns ``None`` and the caller takes Spark's own way.
"""
from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

SOURCES = tuple(sorted(Path(__file__).parent.glob("*.java")))


def spark_jars_dir() -> Path:
    """The jars the driver runs with: ``$SPARK_HOME/jars`` or pip pyspark's own."""
    import pyspark

    home = os.environ.get("SPARK_HOME")
    cands = [Path(home) / "jars"] if home else []
    cands.append(Path(pyspark.__file__).parent / "jars")
    return next((c for c in cands if c.is_dir()), cands[-1])


def jar_path() -> Path:
    from iterflow.cluster.jars import jar_dir

    digest = hashlib.sha256(b"".join(s.read_bytes() for s in SOURCES)).hexdigest()[:12]
    return jar_dir() / f"iterflow-jvm-{digest}.jar"


def build(dest: Path | None = None) -> Path | None:
    """The jar (built if missing); ``None`` with a debug note when it cannot be built."""
    dest = dest or jar_path()
    if dest.exists():
        return dest
    javac = shutil.which("javac")
    if javac is None:
        log.debug("no javac: iterflow's JVM classes are not built")
        return None
    with tempfile.TemporaryDirectory(prefix="iterflow-javac-") as tmp:
        proc = subprocess.run([javac, "-nowarn", "-d", tmp, "-cp", str(spark_jars_dir() / "*"), *map(str, SOURCES)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            log.warning("iterflow's JVM classes did not compile: %s", proc.stderr.strip().splitlines()[:1])
            return None
        dest.parent.mkdir(parents=True, exist_ok=True)
        part = dest.with_suffix(".part")
        with zipfile.ZipFile(part, "w") as z:
            for f in sorted(Path(tmp).rglob("*.class")):
                z.write(f, f.relative_to(tmp).as_posix())
        part.replace(dest)
    return dest


def load_class(sc: Any, name: str, executors: bool = False) -> Any:
    """Class ``io.iterflow.<name>`` in the driver JVM of ``sc`` (one class loader per
    SparkContext); ``executors``: also ship the jar to the executors (once). ``None`` where the
    jar cannot be built or the class not loaded (logged)."""
    try:
        loader = getattr(sc, "_iterflow_loader", None)
        if loader is None:
            jar = build()
            if jar is None:
                return None
            jvm, gw = sc._jvm, sc._gateway
            urls = gw.new_array(jvm.java.net.URL, 1)
            urls[0] = jvm.java.io.File(str(jar)).toURI().toURL()
            loader = jvm.java.net.URLClassLoader(urls, sc._jsc.sc().getClass().getClassLoader())
            sc._iterflow_loader, sc._iterflow_jar, sc._iterflow_shipped = loader, jar, False
        if executors and not sc._iterflow_shipped:
            sc._jsc.sc().addJar(str(sc._iterflow_jar))
            sc._iterflow_shipped = True
        return loader.loadClass(f"io.iterflow.{name}")
    except Exception as exc:  # noqa: BLE001 - another JVM, no javac: the caller's fallback
        log.warning("iterflow's JVM class %s not loaded: %s", name, str(exc).splitlines()[0][:200])
        return None


def new(sc: Any, cls: Any) -> Any:
    """An instance of ``cls`` (a class :func:`load_class` gave) by its no-argument constructor."""
    gw, jvm = sc._gateway, sc._jvm
    return cls.getDeclaredConstructor(gw.new_array(jvm.java.lang.Class, 0)).newInstance(
        gw.new_array(jvm.java.lang.Object, 0))

