"""GraphFrames: the Python package and the JVM jar must be one release."""
from __future__ import annotations

import pytest

from iterflow.cluster import jars


def test_mismatched_jar_fails_with_one_clear_message(tmp_path, monkeypatch):
    (tmp_path / "graphframes-spark4_2.13-0.9.3.jar").write_bytes(b"")
    monkeypatch.setenv("ITERFLOW_JARS", str(tmp_path))
    with pytest.raises(jars.GraphFramesUnavailable, match=r"GraphFrames mismatch: graphframes-py 0\.12\.3.*0\.9\.3"):
        jars.graphframes_jars()
    assert not jars.available()


def test_missing_jar_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("ITERFLOW_JARS", str(tmp_path))
    with pytest.raises(jars.GraphFramesUnavailable, match="make jars.*--packages io.graphframes:graphframes-spark4_2.13:0.12.3"):
        jars.graphframes_jars()


@pytest.mark.cluster
@pytest.mark.skipif(not jars.available(),
                    reason="GraphFrames jar not resolvable from this machine's Maven Central (make jars)")
def test_graphframes_jvm_code_runs_with_the_pinned_pyspark(spark, tmp_path):
    from algorithms import WeaklyConnectedComponents
    from iterflow.loop.driver import IterationDriver
    from iterflow.inputs.generate import write_rmat
    from iterflow.inputs.graphio import load_graph

    spark.sparkContext.setCheckpointDir(str(tmp_path / "gf-cp"))
    g = load_graph(spark, str(write_rmat(tmp_path / "g.txt", 13, 100_000, seed=4)), "edgelist", partitions=4)
    theirs = g.to_graphframe().connectedComponents().toPandas().set_index("id")["component"]
    ours = IterationDriver(spark, partitions=4).run(WeaklyConnectedComponents(g)).output.toPandas()
    ours = ours.set_index("id")["value"]
    assert set(ours.index) == set(theirs.index)
    assert (ours.groupby(theirs.loc[ours.index]).nunique() == 1).all()
    assert (theirs.loc[ours.index].groupby(ours).nunique() == 1).all()
