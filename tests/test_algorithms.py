"""The three algorithms against reference outputs nobody on this project wrote:
LDBC Graphalytics validation outputs, a scipy power iteration, Spark GraphX's own
connected components (JVM code shipped with Spark), and scikit-learn's KMeans."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from algorithms import KMeans, PageRank, WeaklyConnectedComponents
from iterflow.loop.driver import IterationDriver
from iterflow.inputs.generate import write_points, write_rmat
from iterflow.inputs.graphio import load_graph
from iterflow.inputs.pointsio import load_points
from tests.conftest import GRAPHALYTICS

pytestmark = pytest.mark.cluster

PR_CASES = ["example-directed", "example-undirected", "test-pr-directed", "test-pr-undirected"]
WCC_CASES = ["example-directed", "example-undirected", "test-wcc-directed", "test-wcc-undirected"]


def reference(name: str, algo: str) -> pd.Series:
    return pd.read_csv(GRAPHALYTICS / f"{name}-{algo}", sep=" ", header=None, index_col=0)[1]


def same_partition(a: pd.Series, b: pd.Series) -> bool:
    """Two labelings group the vertices identically (label values may differ)."""
    if set(a.index) != set(b.index):
        return False
    b = b.loc[a.index]
    return bool((a.groupby(b).nunique() == 1).all() and (b.groupby(a).nunique() == 1).all())


@pytest.mark.parametrize("name", PR_CASES)
def test_pagerank_matches_graphalytics(spark, name):
    from iterflow.inputs.graphio import read_properties

    g = load_graph(spark, str(GRAPHALYTICS / name), "graphalytics")
    props = read_properties(GRAPHALYTICS / f"{name}.properties")
    prog = PageRank(g, float(props["pr.damping-factor"]), int(props["pr.num-iterations"]))
    res = IterationDriver(spark).run(prog)
    got = res.output.toPandas().set_index("id")["value"]
    ref = reference(name, "PR")
    assert set(got.index) == set(ref.index)
    rel = ((got.loc[ref.index] - ref).abs() / ref).max()
    assert rel <= 1e-4, f"{name}: max relative error {rel:.3g}"
    assert res.iterations == int(props["pr.num-iterations"])


@pytest.mark.parametrize("name", WCC_CASES)
def test_wcc_matches_graphalytics(spark, name):
    g = load_graph(spark, str(GRAPHALYTICS / name), "graphalytics")
    res = IterationDriver(spark).run(WeaklyConnectedComponents(g))
    got = res.output.toPandas().set_index("id")["value"]
    ref = reference(name, "WCC")
    assert same_partition(got, ref)
    # our labels are the smallest vertex id of each component, as in the reference
    assert (got.loc[ref.index] == ref).all()
    assert res.converged and res.supersteps["delta"].iloc[-1] == 0


@pytest.mark.parametrize("share", [0.0, 0.3, 1.0])
def test_wcc_patched_or_rewritten_labels_are_the_components(spark, tmp_path, share):
    """The labels patched where few changed (share 1: every superstep after the first), rewritten
    every superstep (share 0), or both in turn (0.3: a patch grows past the share, the labels are
    rewritten with it, a new patch starts) give the components. Two paths: the least id walks
    one hop a superstep, so the patch is updated over many supersteps (a label falls again)."""
    path = [(k, k + 1) for k in range(14)] + [(100 + k, 101 + k) for k in range(4)]
    (tmp_path / "g.txt").write_text("".join(f"{u} {v}\n" for u, v in path))
    g = load_graph(spark, str(tmp_path / "g.txt"), "edgelist", directed=False)
    prog = WeaklyConnectedComponents(g, patch_share=share)
    res = IterationDriver(spark).run(prog)
    got = res.output.toPandas().set_index("id")["value"].sort_index()
    want = pd.Series({v: (0 if v < 100 else 100) for e in path for v in e}).sort_index()
    assert got.equals(want), got[got != want]
    assert res.converged and res.iterations >= 10
    # each barrier's patch rows: its state rows less the labels (one a vertex) and the changed set;
    # a superstep patches where the last barrier's patch and changed set were within the share
    steps = res.supersteps
    patch, changed = (steps["state_rows"] - len(want) - steps["delta"]).to_numpy(), steps["delta"].to_numpy()
    patched = np.r_[False, patch[:-1] + changed[:-1] <= share * len(want)]
    assert ((patch > 0) == patched).all(), (patch, changed)
    if share == 1:
        assert patched.sum() >= len(patched) - 2, patch  # all but the first and one rewrite
    if share == 0.3:  # patched, rewritten with its patch, patched again
        assert any(patched[i] and not patched[i + 1] and patched[i + 2:].any() for i in range(len(patch) - 2)), patch
    # two jobs a superstep either way: the labels carried over are not checkpointed again --
    # and where the barrier copies the state to files (every 10th), one job a frame more, the
    # carried labels' copy too (none recomputing the superstep); one more where the superstep
    # looked its few active vertices up (their ids collected: all of them here, after the first)
    looked = (steps["delta"].shift() > 0) & (steps["delta"].shift() <= prog.lookup_active)
    later, base = steps.iloc[1:], 2 + looked.iloc[1:].astype(int)
    assert looked.iloc[1:].all()
    assert (later.loc[~later["checkpointed"], "jobs"] == base[~later["checkpointed"]]).all(), \
        later[["superstep", "jobs"]].to_string()
    if share == 1:
        assert (later.loc[later["checkpointed"], "jobs"] == base[later["checkpointed"]] + 3).all()
        assert later["checkpointed"].any()


def scipy_pagerank(edges: np.ndarray, ids: np.ndarray, d: float, iters: int) -> pd.Series:
    import scipy.sparse as sp

    n = len(ids)
    pos = pd.Series(np.arange(n), index=ids)
    s, t = pos.loc[edges[:, 0]].to_numpy(), pos.loc[edges[:, 1]].to_numpy()
    outdeg = np.bincount(s, minlength=n).astype(float)
    m = sp.csr_matrix((1.0 / outdeg[s], (t, s)), shape=(n, n))
    r = np.full(n, 1.0 / n)
    dangling = outdeg == 0
    for _ in range(iters):
        r = (1 - d) / n + d * (m @ r) + d * r[dangling].sum() / n
    return pd.Series(r, index=ids)


@pytest.fixture(scope="module")
def rmat_file(tmp_path_factory):
    return write_rmat(tmp_path_factory.mktemp("rmat") / "rmat.txt", scale=14, edges=120_000, seed=7)


def test_pagerank_matches_scipy_power_iteration(spark, tmp_path):
    path = write_rmat(tmp_path / "small.txt", scale=11, edges=15_000, seed=3)
    g = load_graph(spark, str(path), "edgelist", directed=True, partitions=4)
    res = IterationDriver(spark, partitions=4).run(PageRank(g, 0.85, max_iterations=15))
    got = res.output.toPandas().set_index("id")["value"]
    e = g.edges.toPandas()[["src", "dst"]].to_numpy()
    ref = scipy_pagerank(e, np.sort(g.vertices.toPandas()["id"].to_numpy()), 0.85, 15)
    rel = ((got.loc[ref.index] - ref).abs() / ref).max()
    assert rel <= 1e-6, f"max relative error {rel:.3g}"


def graphx_components(spark, edge_file: str, out_dir: str) -> pd.Series:
    """Spark GraphX's ConnectedComponents (Scala code shipped in pyspark's jars), via py4j."""
    sc = spark.sparkContext
    jvm = sc._jvm
    level = jvm.org.apache.spark.storage.StorageLevel.MEMORY_AND_DISK()
    graph = jvm.org.apache.spark.graphx.GraphLoader.edgeListFile(sc._jsc.sc(), edge_file, False, -1, level, level)
    tag = getattr(getattr(jvm.scala.reflect, "ClassTag$"), "MODULE$")
    cc = jvm.org.apache.spark.graphx.lib.ConnectedComponents.run(graph, tag.Int(), tag.Int())
    cc.vertices().saveAsTextFile(out_dir)  # lines "(id,component)"
    rows = sc.textFile(out_dir).map(lambda s: tuple(int(x) for x in s.strip("()").split(","))).collect()
    return pd.Series(dict(rows))


def test_wcc_matches_spark_graphx_on_rmat(spark, rmat_file, tmp_path):
    g = load_graph(spark, str(rmat_file), "edgelist", partitions=4)
    assert g.edges.count() >= 100_000
    res = IterationDriver(spark, partitions=4).run(WeaklyConnectedComponents(g))
    got = res.output.toPandas().set_index("id")["value"]
    ref = graphx_components(spark, str(rmat_file), str(tmp_path / "graphx-cc"))
    # GraphX keeps vertices whose only edge is a self-loop; our loader drops self-loops.
    assert set(got.index) <= set(ref.index)
    assert same_partition(got, ref.loc[got.index])
    # the active set shrinks: the last supersteps process far fewer vertices than the first
    work = res.supersteps["work"].to_numpy()
    assert work[-1] < work[0] / 10
    assert res.converged


def test_kmeans_matches_scikit_learn(spark, tmp_path):
    from sklearn.cluster import KMeans as SkKMeans

    path = write_points(tmp_path / "pts.csv", n=3000, k=4, dim=3, seed=5)
    x = np.loadtxt(path, delimiter=",", skiprows=1)
    init = x[[0, 700, 1400, 2100]]
    pts = load_points(spark, str(path), "csv", partitions=4)
    res = IterationDriver(spark, partitions=4).run(KMeans(pts, 4, init, max_iterations=8, tol=None))
    got = res.output.toPandas().sort_values("cluster")[["f0", "f1", "f2"]].to_numpy()
    sk = SkKMeans(4, init=init, n_init=1, max_iter=8, tol=0, algorithm="lloyd").fit(x)
    assert np.abs(got - sk.cluster_centers_).max() <= 1e-6
    assert res.iterations == 8 or res.supersteps["delta"].iloc[-1] == 0


def test_kmeans_parallel_init_is_seeded_and_converges(spark, tmp_path):
    path = write_points(tmp_path / "pts.csv", n=2000, k=3, dim=2, seed=11)
    pts = load_points(spark, str(path), "csv", partitions=4)
    a, b = (KMeans(pts, 3, seed=42).init(spark).values["centers"] for _ in range(2))
    assert np.array_equal(a, b)
    res = IterationDriver(spark, partitions=4).run(KMeans(pts, 3, seed=42, max_iterations=100, tol=1e-6))
    assert res.converged and res.iterations < 100


def test_relayout_keeps_the_callers_cached_input(spark, tmp_path):
    """A rescale re-caches k-means' points spread over the new executors, but the points the
    caller passed in stay cached: other jobs may share them (an experiment's next run did
    re-read the CSV at every superstep, 3x slower, before this was fixed)."""
    path = write_points(tmp_path / "pts.csv", n=500, k=2, dim=2, seed=3)
    pts = load_points(spark, str(path), "csv", partitions=2)
    assert pts.is_cached
    prog = KMeans(pts, 2, seed=1, max_iterations=2)
    prog.partitions = 2  # as the driver sets it
    state = prog.init(spark)
    prog.relayout(3, state)
    mine = prog.points
    assert mine is not pts and mine.is_cached and mine.rdd.getNumPartitions() == 3
    assert pts.is_cached
    prog.relayout(2, state)  # the program's own earlier copy is freed
    assert not mine.is_cached and prog.points.is_cached and pts.is_cached
    mine = prog.points
    with prog.narrow_views():  # a count dividing the old: a view of the cached blocks, not rebuilt
        prog.relayout(1, state)
    assert prog.points.rdd.getNumPartitions() == 1 and not prog.points.is_cached and mine.is_cached
    assert prog.points.count() == pts.count()
    prog.relayout(2, state)  # rebuilt from the view; what it read is freed
    assert not mine.is_cached and prog.points.is_cached and pts.is_cached
    prog.release()
    assert not prog.points.is_cached and pts.is_cached
