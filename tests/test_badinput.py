"""Bad input, generated: malformed edge and point files and bad command lines end in exit
status 2 with one ``iterflow: error:`` line naming the file and line or the parameter, or in
the documented cleaning (self-loops and duplicate edges dropped with a warning); never in a
hang or a traceback.

Most cases run in-process: argument errors through ``iterflow.app.cli.main`` with the cluster
step replaced by a tripwire (no case may get that far), file errors through the loaders on
the session's Spark. A bounded number go through the real CLI in a subprocess with a timeout.
"""
from __future__ import annotations

import contextlib
import io
import math
import string
import tempfile
import uuid
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from iterflow.app import cli
from iterflow.errors import InputError
from tests.conftest import APP_CORES, GRAPHALYTICS, run_cli

# Tests that load files on the session's Spark or run the CLI are marked ``cluster`` one by
# one; the bad command lines (in-process, cluster step a tripwire) need no Spark.

_CHECKS = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large]
FAST = settings(deadline=None, max_examples=60, suppress_health_check=_CHECKS)  # no Spark
SPARK = settings(deadline=None, max_examples=12, suppress_health_check=_CHECKS)  # one load each
CLI = settings(deadline=None, max_examples=4, suppress_health_check=_CHECKS)  # a JVM each


# -- inputs and helpers ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("badinput")
    (d / "g.txt").write_text("1 2\n2 3\n3 1\n")
    (d / "p.csv").write_text("f0,f1\n0,0\n1,1\n5,5\n6,6\n")
    (d / "dir").mkdir()
    return {"dir": d, "graph": d / "g.txt", "points": d / "p.csv", "a_dir": d / "dir"}


def fresh(inputs: dict[str, Path], name: str) -> Path:
    """A new path in its own directory (hypothesis runs many examples in one test)."""
    return Path(tempfile.mkdtemp(dir=inputs["dir"])) / name


def base_args(algorithm: str, inputs: dict[str, Path]) -> list[str]:
    data = inputs["points"] if algorithm == "kmeans" else inputs["graph"]
    args = ["run", algorithm, "--input", str(data), "--output", str(inputs["dir"] / "out")]
    return args + (["--k", "2"] if algorithm == "kmeans" else [])


def cli_in_process(argv: list[str]) -> tuple[int, str]:
    """Exit status and stderr of ``iterflow ARGV``; reaching the cluster step is a failure."""
    err = io.StringIO()
    tripwire = mock.patch("iterflow.app.runner.cluster_for", side_effect=AssertionError("bad input reached the cluster"))
    with tripwire, contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            status = cli.main(argv)
        except SystemExit as exc:  # argparse
            status = exc.code
    return status, err.getvalue()


def assert_one_error_line(status: int, err: str, *needles: str) -> None:
    """Status 2; the last line, and no other, is ``iterflow: error: ...`` naming ``needles``."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert status == 2, (status, err)
    errors = [ln for ln in lines if "error" in ln.lower() or "Traceback" in ln]
    assert errors == lines[-1:] and lines[-1].startswith("iterflow: error:"), err
    for needle in needles:
        assert needle in lines[-1], (needle, lines[-1])


def assert_input_error(excinfo: pytest.ExceptionInfo[InputError], *needles: str) -> None:
    message = str(excinfo.value)
    assert "\n" not in message, message
    for needle in needles:
        assert needle in message, (needle, message)


# -- bad command lines (in-process, no Spark) ----------------------------------------------------
RUN_OPTIONS = sorted(cli.build_parser()._subparsers._group_actions[0].choices["run"]._option_string_actions)
INT_MINIMUM = {"--iterations": 1, "--workers": 1, "--cores-per-worker": 1, "--executors": 1,
               "--min-executors": 1, "--max-executors": 1, "--checkpoint-interval": 1, "--seed": 0, "--k": 1}
NOT_AN_INT = st.sampled_from(["nan", "inf", "1.5", "1e3", "", "abc", "0x10", "2,5", "--", "one"])


def _bad_float(option: str) -> st.SearchStrategy[str]:
    always = st.sampled_from(["nan", "NaN", "inf", "-inf", "abc", "", "1,5", "1e999"])
    negative = st.floats(max_value=-1e-9, allow_nan=False, allow_infinity=False).map(repr)
    if option == "--cpu-share":  # (0, cores-per-worker], and cores-per-worker is 1 here
        return always | negative | st.just("0") | st.floats(min_value=1.001, max_value=1e6).map(repr)
    if option in ("--target-seconds", "--switch-to-delta", "--budget"):
        return always | negative | st.just("0")
    if option == "--rebalance":  # a max/mean ratio: > 1
        return always | negative | st.floats(min_value=0, max_value=1).map(repr)
    return always | negative  # --tol


@st.composite
def bad_number(draw: st.DrawFn) -> tuple[str, str, str]:
    """(algorithm, option, value): one numeric option given a value it must refuse."""
    if draw(st.booleans()):
        option = draw(st.sampled_from(sorted(INT_MINIMUM)))
        value = draw(st.integers(max_value=INT_MINIMUM[option] - 1).map(str) | NOT_AN_INT)
    else:
        option = draw(st.sampled_from(["--tol", "--target-seconds", "--cpu-share", "--rebalance",
                                       "--switch-to-delta", "--budget"]))
        value = draw(_bad_float(option))
    if option == "--k":
        return "kmeans", option, value
    if option in ("--rebalance", "--switch-to-delta"):
        return "pagerank", option, value
    return draw(st.sampled_from(["pagerank", "wcc"])), option, value


def test_a_budget_applies_to_fastest_only(inputs):
    status, err = cli_in_process(base_args("pagerank", inputs) + ["--policy", "target", "--target-seconds", "60",
                                                                 "--budget", "1.2"])
    assert_one_error_line(status, err, "--budget applies to --policy fastest only")


@FAST
@given(case=bad_number())
def test_bad_numbers_name_their_option(inputs, case):
    algorithm, option, value = case
    status, err = cli_in_process(base_args(algorithm, inputs) + [f"{option}={value}"])
    assert_one_error_line(status, err, option)


@FAST
@given(option=st.from_regex(r"--[a-z][a-z-]{0,14}", fullmatch=True), value=st.text(string.ascii_letters, max_size=4))
def test_unknown_options_are_named(inputs, option, value):
    assume(not any(known.startswith(option) for known in RUN_OPTIONS))  # argparse takes prefixes
    status, err = cli_in_process(base_args("pagerank", inputs) + [option, value])
    assert_one_error_line(status, err, option)


@FAST
@given(word=st.text(string.ascii_letters + string.digits + "-_", min_size=1, max_size=12))
def test_unknown_algorithm_or_command_is_named(inputs, word):
    assume(word not in ("pagerank", "wcc", "kmeans") and not word.startswith("-"))
    status, err = cli_in_process(["run", word, "--input", str(inputs["graph"]), "--output", "x"])
    assert_one_error_line(status, err, word)


CONFLICTS = [
    ("pagerank", ["--directed", "--undirected"], ["--undirected", "--directed"]),
    ("pagerank", ["--policy", "static", "--target-seconds", "5"], ["--target-seconds", "static"]),
    ("pagerank", ["--policy", "target"], ["--target-seconds"]),
    ("pagerank", ["--policy", "efficiency", "--min-executors", "3", "--max-executors", "2"], ["--policy efficiency"]),
    ("pagerank", ["--policy", "bogus"], ["--policy", "bogus"]),
    ("pagerank", ["--k", "3"], ["--k", "kmeans"]),
    ("wcc", ["--rebalance", "1.2"], ["--rebalance", "pagerank"]),
    ("kmeans", ["--switch-to-delta", "0.01"], ["--switch-to-delta", "pagerank"]),
    ("wcc", ["--init-centers", "{points}"], ["--init-centers"]),
    ("pagerank", ["--format", "csv"], ["--format", "csv"]),
    ("kmeans", ["--format", "edgelist"], ["--format", "edgelist"]),
    ("kmeans", ["--undirected"], ["--undirected"]),
    ("kmeans", ["--init-centers", "/nonexistent/c.csv"], ["/nonexistent/c.csv", "--init-centers"]),
    ("pagerank", ["--output", "."], ["--output"]),
    ("pagerank", ["--output", ""], ["--output"]),
    ("pagerank", ["--output", "{graph}"], ["--output", "input"]),
    ("pagerank", ["--stats", "{a_dir}"], ["--stats"]),
    ("pagerank", ["--memory", "lots"], ["--memory"]),
    ("pagerank", ["--memory", "0g"], ["--memory"]),
    ("pagerank", ["--conf", "novalue"], ["--conf"]),
    ("pagerank", ["--conf", "=v"], ["--conf"]),
    ("pagerank", ["--input", ""], ["--input"]),
    ("pagerank", ["--input", "/nonexistent/g.txt"], ["/nonexistent/g.txt", "no such file"]),
    ("pagerank", ["--format", "graphalytics", "--input", "/nonexistent/g"], ["/nonexistent/g.e", "no such file"]),
]


@pytest.mark.parametrize("algorithm,extra,needles", CONFLICTS, ids=[" ".join(c[1]) for c in CONFLICTS])
def test_conflicting_or_impossible_options(inputs, algorithm, extra, needles):
    extra = [a.format(**{k: str(v) for k, v in inputs.items()}) for a in extra]
    status, err = cli_in_process(base_args(algorithm, inputs) + extra)
    assert_one_error_line(status, err, *needles)


# -- malformed edge files (in-process, session Spark) ----------------------------------------------
IDS = st.integers(0, 10**6).map(str)
BAD_TOKEN = st.sampled_from(["a", "x1", "1x", "0x10", "1.5", "-3", "+4", "1e3", "NaN", "inf", "\u0661\u0662",
                             "9" * 19, "3,4", "1_0", "\ufffd"]) | st.text(string.ascii_letters + "!$%&*", min_size=1,
                                                                           max_size=5)
SEP = st.sampled_from([" ", "\t", "  ", " \t "])
BAD_LINE = st.one_of(
    st.tuples(BAD_TOKEN, SEP, IDS).map("".join),                      # non-numeric or negative source
    st.tuples(IDS, SEP, BAD_TOKEN).map("".join),                      # ... destination
    IDS,                                                              # one column
    st.lists(IDS, min_size=4, max_size=6).map(" ".join),              # too many columns
    st.tuples(IDS, IDS, st.text("abcdfxyz", min_size=1, max_size=4)).map(" ".join),  # a weight that is text
)
GOOD_LINE = st.one_of(
    st.tuples(IDS, SEP, IDS).map("".join),
    st.tuples(IDS, IDS, st.sampled_from(["0.5", "1e-3", "-2", "7"])).map(" ".join),
    st.text(string.ascii_letters + string.digits + " \t", max_size=20).map(lambda t: "# " + t),
    st.sampled_from(["", "   ", "\t"]),
)


@pytest.mark.cluster
@SPARK
@given(before=st.lists(GOOD_LINE, max_size=6), bad=BAD_LINE, after=st.lists(GOOD_LINE, max_size=3),
       newline=st.sampled_from(["\n", "\r\n"]))
def test_malformed_edge_line_is_named_with_its_number(spark, inputs, before, bad, after, newline):
    from iterflow.inputs.graphio import load_graph

    path = fresh(inputs, "edges.txt")
    path.write_bytes(newline.join(before + [bad] + after).encode())
    with pytest.raises(InputError) as err:
        load_graph(spark, str(path), "edgelist")
    assert_input_error(err, str(path), f"line {len(before) + 1}:", "integer vertex ids")


@pytest.mark.cluster
@settings(SPARK, max_examples=8)
@given(junk=st.binary(min_size=1, max_size=300))
def test_binary_junk_is_an_input_error_or_a_graph(spark, inputs, junk):
    from iterflow.inputs.graphio import Graph, load_graph

    path = fresh(inputs, "junk.e")
    path.write_bytes(junk)
    try:
        assert isinstance(load_graph(spark, str(path), "edgelist"), Graph)  # junk that happens to be edges
    except InputError as exc:
        assert str(path) in str(exc) and "\n" not in str(exc)


@pytest.mark.cluster
@settings(SPARK, max_examples=5)
@given(edges=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), min_size=1, max_size=25),
       directed=st.booleans())
def test_self_loops_and_duplicates_are_cleaned_and_counted(spark, inputs, edges, directed):
    """The documented cleaning step, not an error: counts match a plain-Python reference."""
    from iterflow.inputs.graphio import load_graph

    assume(any(u != v for u, v in edges))
    path = fresh(inputs, "dups.txt")
    path.write_text("".join(f"{u} {v}\n" for u, v in edges))
    g = load_graph(spark, str(path), "edgelist", directed=directed)
    loops = sum(u == v for u, v in edges)
    kept = {(u, v) if directed else (min(u, v), max(u, v)) for u, v in edges if u != v}
    assert g.cleaning == {"self_loops_dropped": loops, "duplicate_edges_dropped": len(edges) - loops - len(kept)}
    assert sorted(map(tuple, g.edges.toPandas()[["src", "dst"]].to_numpy().tolist())) == sorted(kept)


EMPTY = [("edges", c, "empty") for c in ["", "\n\n", "# only a comment\n", "   \n\t\n", "7 7\n"]] + \
        [("points", c, "no points") for c in ["", "\n", "f0,f1\n", "f0,f1\n\n\n"]]


@pytest.mark.cluster
@pytest.mark.parametrize("kind,content,says", EMPTY)
def test_empty_files_say_so(spark, inputs, kind, content, says):
    from iterflow.inputs.graphio import load_graph
    from iterflow.inputs.pointsio import load_points

    path = fresh(inputs, "empty.txt" if kind == "edges" else "points.csv")
    path.write_text(content)
    with pytest.raises(InputError) as err:
        load_graph(spark, str(path), "edgelist") if kind == "edges" else load_points(spark, str(path), "csv")
    assert_input_error(err, str(path), says)


def _graphalytics(inputs: dict[str, Path], v: str = "1\n2\n3\n", e: str = "1 2\n2 3\n",
                  props: str | bytes | None = "graph.g.directed = true\n") -> Path:
    base = fresh(inputs, "g")
    base.with_suffix(".v").write_text(v)
    base.with_suffix(".e").write_text(e)
    if props is not None:
        p = base.with_suffix(".properties")
        p.write_bytes(props if isinstance(props, bytes) else props.encode())
    return base


GRAPHALYTICS_CASES = {
    "bad edge line": (dict(e="1 2\n2 x\n"), ".e", ["line 2"]),
    "bad vertex line": (dict(v="1\n2 2\n3\n"), ".v", ["line 2"]),
    "endpoint not a vertex": (dict(e="1 2\n2 9\n"), ".e", ["9", "not listed"]),
    "directed is neither": (dict(props="graph.g.directed = maybe\n"), ".properties", ["directed", "maybe"]),
    "properties line without =": (dict(props="# c\ngraph.g.directed true\n"), ".properties", ["line 2"]),
    "properties not text": (dict(props=b"\xff\xfe\x00junk"), ".properties", ["not a text file"]),
    "iterations not a number": (dict(props="graph.g.pr.num-iterations = ten\n"), ".properties",
                                ["pr.num-iterations", "ten"]),
    "damping out of range": (dict(props="graph.g.pr.damping-factor = 1.5\n"), ".properties", ["pr.damping-factor"]),
}


@pytest.mark.cluster
@pytest.mark.parametrize("case", sorted(GRAPHALYTICS_CASES))
def test_malformed_graphalytics_files_are_named(spark, inputs, case):
    from iterflow.app.runner import build_program
    from iterflow.app.spec import JobSpec

    kwargs, suffix, needles = GRAPHALYTICS_CASES[case]
    base = _graphalytics(inputs, **kwargs)
    spec = JobSpec(algorithm="pagerank", input=str(base), output=str(base) + "-out", format="graphalytics")
    with pytest.raises(InputError) as err:  # a bad line is caught before any JVM, the rest by Spark
        spec.validate()
        build_program(spec, spark, 2)
    assert_input_error(err, str(base) + suffix, *needles)


@pytest.mark.cluster
def test_missing_vertex_file_is_named(spark, inputs):
    from iterflow.inputs.graphio import load_graph

    base = _graphalytics(inputs)
    base.with_suffix(".v").unlink()
    with pytest.raises(InputError) as err:
        load_graph(spark, str(base), "graphalytics")
    assert_input_error(err, str(base) + ".v", "no such file")


# -- malformed point files ---------------------------------------------------------------------------
FLOATS = st.floats(allow_nan=False, allow_infinity=False, width=32).map(repr)


@st.composite
def bad_csv(draw: st.DrawFn) -> tuple[str, int, str]:
    """(content, number of the first bad line, what the message says)."""
    width = draw(st.integers(1, 4))
    header = draw(st.booleans())
    rows = draw(st.lists(st.lists(FLOATS, min_size=width, max_size=width).map(",".join), min_size=1, max_size=5))
    kind = draw(st.sampled_from(["ragged", "text", "nan"]))
    cells = draw(st.lists(FLOATS, min_size=width, max_size=width))
    i = draw(st.integers(0, width - 1))
    if kind == "ragged":
        n = draw(st.sampled_from([n for n in (width - 1, width + 1, width + 3) if n >= 1]))
        bad, says = ",".join(draw(st.lists(FLOATS, min_size=n, max_size=n))), f"expected {width} columns"
    elif kind == "text":
        texts = ["abc", "1.2.3", "--1", "0x1p", "1;5"] + ([""] if width > 1 else [])  # "" alone: a blank line
        cells[i] = draw(st.sampled_from(texts))
        bad, says = ",".join(cells), "not a number"
    else:
        cells[i] = draw(st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "1e999"]))
        bad, says = ",".join(cells), "NaN or infinite"
    after = draw(st.lists(st.lists(FLOATS, min_size=width, max_size=width).map(",".join), max_size=3))
    lines = ([",".join(f"f{j}" for j in range(width))] if header else []) + rows
    blank = draw(st.sampled_from([[], [""]]))  # a blank line counts in the numbering, never errs
    lines = lines + blank
    return "\n".join(lines + [bad] + after) + "\n", len(lines) + 1, says


@pytest.mark.cluster
@SPARK
@given(case=bad_csv())
def test_malformed_point_row_is_named_with_its_number(spark, inputs, case):
    from iterflow.inputs.pointsio import load_points

    content, line, says = case
    path = fresh(inputs, "points.csv")
    path.write_text(content)
    with pytest.raises(InputError) as err:
        load_points(spark, str(path), "csv")
    assert_input_error(err, str(path), f"line {line}:", says)


PARQUET_CASES = {
    "nan": (pd.DataFrame({"x": [1.0, math.nan]}), "NaN, null or infinite"),
    "inf": (pd.DataFrame({"x": [1.0, -math.inf]}), "NaN, null or infinite"),
    "null": (pd.DataFrame({"x": pd.array([1, None], dtype="Int64")}), "NaN, null or infinite"),
    "text column": (pd.DataFrame({"x": [1.0, 2.0], "label": ["a", "b"]}), "'label'"),
    "no features": (pd.DataFrame({"id": [1, 2]}), "no numeric feature columns"),
    "no rows": (pd.DataFrame({"x": np.array([], dtype=float)}), "no points"),
    "not parquet": (None, "cannot read as Parquet"),
}


@pytest.mark.cluster
@pytest.mark.parametrize("case", sorted(PARQUET_CASES))
def test_malformed_parquet_points_are_named(spark, inputs, case):
    from iterflow.inputs.pointsio import load_points

    frame, says = PARQUET_CASES[case]
    path = fresh(inputs, "points.parquet")
    if frame is None:
        path.write_bytes(b"PAR1 this is not parquet " + uuid.uuid4().bytes)
    else:
        frame.to_parquet(path, index=False)
    with pytest.raises(InputError) as err:
        load_points(spark, str(path), "parquet")
    assert_input_error(err, str(path), says)


# -- the same through the real CLI (a bounded number: each is a process, file cases a JVM) -------
def assert_clean_cli_failure(r, out: Path, *needles: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stderr[-3000:])
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("iterflow:")]  # not Spark's own log lines
    try:
        assert_one_error_line(2, "\n".join(lines), *needles)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- the whole stderr:\n{r.stderr[-4000:]!r}") from None
    assert r.stderr.strip().splitlines()[-1].startswith("iterflow: error:"), r.stderr[-3000:]
    assert "Traceback" not in r.stderr and "\tat org.apache" not in r.stderr
    assert not out.exists()


@pytest.mark.cluster
@settings(CLI, max_examples=6)
@given(case=bad_number())
def test_bad_numbers_through_the_real_cli(cli_env, inputs, case):
    algorithm, option, value = case
    out = fresh(inputs, "out")
    args = base_args(algorithm, inputs) + [f"{option}={value}", "--output", str(out), "--master", "spark://127.0.0.1:1"]
    assert_clean_cli_failure(run_cli(args, cli_env, timeout=120), out, option)


@pytest.mark.cluster
@settings(CLI, max_examples=2)
@given(before=st.lists(GOOD_LINE, max_size=3), bad=BAD_LINE, algorithm=st.sampled_from(["pagerank", "wcc"]))
def test_malformed_edge_file_through_the_real_cli(cluster, cli_env, inputs, before, bad, algorithm):
    path, out = fresh(inputs, "edges.txt"), fresh(inputs, "out")
    path.write_text("\n".join(before + [bad]) + "\n")
    r = run_cli(["run", algorithm, "--input", str(path), "--output", str(out), "--no-mlflow",
                 "--master", cluster.master_url, "--conf", f"spark.cores.max={APP_CORES}"], cli_env, timeout=300)
    assert_clean_cli_failure(r, out, str(path), f"line {len(before) + 1}")


@pytest.mark.cluster
def test_malformed_points_through_the_real_cli(cluster, cli_env, inputs):
    path, out = fresh(inputs, "points.csv"), fresh(inputs, "out")
    path.write_text("f0,f1\n1,2\n3\n")
    r = run_cli(["run", "kmeans", "--input", str(path), "--k", "1", "--output", str(out), "--no-mlflow",
                 "--master", cluster.master_url, "--conf", f"spark.cores.max={APP_CORES}"], cli_env, timeout=300)
    assert_clean_cli_failure(r, out, str(path), "line 3", "expected 2 columns")


@pytest.mark.cluster
def test_graphalytics_reference_still_loads(spark):
    """The fixes above refuse nothing that is valid: the Graphalytics example loads as before."""
    from iterflow.inputs.graphio import load_graph

    g = load_graph(spark, str(GRAPHALYTICS / "example-directed"), "graphalytics")
    assert g.vertices.count() == 10 and g.edges.count() == 17 and g.directed
