"""The cluster profile (`iterflow cluster calibrate`'s measured task slow-down), without Spark:
its file, what a run's model learns from it, the calibration's sizes and bad input."""
from __future__ import annotations

import json
import os
import re

import pytest

from conftest import run_cli
from iterflow.app.calibrate import Scripted, describe, schedule, sizes_for
from iterflow.cluster import profile
from iterflow.cluster.profile import ClusterProfile
from iterflow.errors import InputError

# a cluster whose tasks run 1.5x as long at 4 slots as at 1 (as the emulated one's do)
SLOWER = {1.0: [0.10, 0.10], 2.0: [0.115, 0.114], 4.0: [0.15, 0.151]}


def test_profile_round_trips_and_keeps_other_clusters(tmp_path):
    path = tmp_path / "profiles.json"
    profile.save(ClusterProfile("embedded 4x1 cpu-share 0.5", SLOWER, job="pagerank"), path)
    profile.save(ClusterProfile("spark://h:7077", {1.0: [0.2], 8.0: [0.2]}), path)
    got = profile.load("embedded 4x1 cpu-share 0.5", path)
    assert got is not None and got.task_seconds == SLOWER and got.job == "pagerank"
    assert profile.load("spark://h:7077", path).sizes == [1.0, 8.0]
    assert profile.load("never calibrated", path) is None
    assert (path.stat().st_mode & 0o777) == 0o600


def test_a_broken_profile_file_is_named(tmp_path):
    path = tmp_path / "profiles.json"
    path.write_text("{not json")
    with pytest.raises(InputError, match="profiles.json"):
        profile.load("c", path)
    path.write_text(json.dumps({"c": {"cluster": "c", "task_seconds": {"one": [1]}}}))
    with pytest.raises(InputError, match=r"profiles.json \['c'\]: not a cluster profile"):
        profile.load("c", path)


def test_a_first_run_learns_the_slow_down_from_the_profile(tmp_path, monkeypatch):
    """No earlier run on the cluster in the MLflow store: the model still knows a task measured
    at 4 slots runs faster at 2, from the profile alone."""
    from iterflow.app.runner import cluster_knowledge

    def cluster_model(key):
        return cluster_knowledge(key)[0]

    monkeypatch.setenv("ITERFLOW_HOME", str(tmp_path))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    assert cluster_model("c").replay.contention.none  # nothing calibrated, nothing run
    profile.save(ClusterProfile("c", SLOWER))
    slow = cluster_model("c").replay.contention
    assert not slow.none and slow.jobs == 1
    assert slow.task(0.15, 4, 1) == pytest.approx(0.10, rel=0.1)
    assert cluster_model("another cluster").replay.contention.none


def calibration_rows(walls: dict[int, float], hold: int = 7, slow: float = 1.5) -> list[dict]:
    """A calibration run's table as :func:`~iterflow.app.calibrate.measure` runs it: the maximum
    held twice as long (its JIT warm-up, ``slow`` x), then each size down to 1 (the pass measured),
    then 2 and the maximum again on fresh executors (``slow`` x; the first of them still at 1); the
    first superstep at each size twice its steady time."""
    top = max(walls)
    low = min(walls)  # the climb's first superstep still runs there, its new executor pending
    plan = [(top, 2 * hold, slow)] + [(e, hold, 1.0) for e in sorted(walls, reverse=True)] + \
        [(low, 1, slow), (2, hold, slow), (top, hold, slow)]
    rows, i, prev = [], 0, None
    for e, n, factor in plan:
        for k in range(n):
            i += 1
            first = e != prev and k == 0
            rows.append({"superstep": i, "executors": e, "cores": e, "partitions": 8, "work": 1.0, "delta": None,
                         "wall_seconds": walls[e] * factor * (2 if first else 1)})
        prev = e
    return rows


def test_the_profile_keeps_how_fast_its_job_ran_at_each_size_and_a_cold_start_plans_from_it(tmp_path, monkeypatch):
    """The task slow-down says 4 slots run the most tasks a second; the calibration job's own
    supersteps ran about as fast at 3 (within the cold start's tie): a cold ``target`` starts at
    3. Only the pass the calibration measured counts -- the warm-up hold at the maximum and the climb back on fresh
    executors (only 2 and the maximum have them) would make 3 look faster than it was."""
    from iterflow.app.runner import cluster_knowledge
    from iterflow.policies import TargetPolicy

    walls = {4: 1.00, 3: 1.04, 2: 1.40, 1: 2.50}
    cal = ClusterProfile("c", SLOWER, supersteps=calibration_rows(walls), notes={"warmup_supersteps": 1})
    assert cal.steady_walls() == {4.0: [1.0] * 7, 3.0: [1.04] * 6, 2.0: [1.40] * 6, 1.0: [2.50] * 6}
    named = ClusterProfile("c", SLOWER, supersteps=calibration_rows(walls),
                           notes={"warmup_supersteps": 1, "measured_supersteps": list(range(15, 43))})
    assert named.steady_walls() == cal.steady_walls()  # a profile that names its measured supersteps
    assert "a steady superstep (median) at 1: 2.50s, 2: 1.40s, 3: 1.04s, 4: 1.00s" in describe(cal)
    monkeypatch.setenv("ITERFLOW_HOME", str(tmp_path))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    profile.save(cal)
    want = TargetPolicy(30, max_executors=4).plan_start([], cluster_knowledge("c")[0])
    assert want is not None and want.executors == 3, want
    assert "superstep took 1.04s at 3 slots and 1.00s at 4" in want.reason
    profile.save(ClusterProfile("c", SLOWER, supersteps=calibration_rows({**walls, 3: 1.40})))
    # 40 % slower at 3 on the measured pass (22 % pooled with the first), past the cold start's
    # tie: 4 (with the warm-up and the climb counted, 4's median would be 1.5 s and 3 look faster)
    assert TargetPolicy(30, max_executors=4).plan_start([], cluster_knowledge("c")[0]) is None


def test_a_cold_start_reads_the_fastest_size_on_the_clusters_calibrations_together(tmp_path, monkeypatch):
    """One calibration reads the sizes with an error as large as their differences: the newest
    saying 4 runs 30 % faster than 3 where the four before it read 3 as fast does not move a cold
    ``target`` to 4. Each calibration is read as ratios to its own largest size (one ran slower all
    through), the newest five together; ``fresh`` forgets the earlier ones."""
    from iterflow.app.runner import cluster_knowledge
    from iterflow.policies import TargetPolicy

    monkeypatch.setenv("ITERFLOW_HOME", str(tmp_path))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    base = {4: 1.00, 3: 0.98, 2: 1.30, 1: 2.40}

    def calibrated(walls: dict[int, float], at: str, fresh: bool = False) -> ClusterProfile:
        profile.save(ClusterProfile("c", SLOWER, measured_at=at, supersteps=calibration_rows(walls),
                                    notes={"warmup_supersteps": 1}), fresh=fresh)
        return profile.load("c")

    def start() -> int:
        want = TargetPolicy(30, max_executors=4).plan_start([], cluster_knowledge("c")[0])
        return 4 if want is None else want.executors

    for day in range(1, 7):  # six calibrations, the last three running 1.5x slow at every size
        got = calibrated({e: w * (1.5 if day >= 4 else 1.0) for e, w in base.items()}, f"2026-11-0{day}")
    assert [e["measured_at"] for e in got.earlier] == ["2026-11-02", "2026-11-03", "2026-11-04", "2026-11-05"]
    assert got.pooled_walls()[3.0] == pytest.approx([0.98 * 1.5])  # in the newest one's seconds
    got = calibrated({**base, 3: 1.30}, "2026-11-07")  # the newest alone: 4 is 30 % faster
    assert got.pooled_walls()[3.0] == pytest.approx([0.98]) and got.pooled_walls()[4.0] == pytest.approx([1.0])
    assert start() == 3
    assert "pooled: the median over this calibration and 4 earlier" in describe(got)
    assert got.steady_walls()[3.0] == pytest.approx([1.30] * 6)  # its own walls stay its own
    calibrated({**base, 3: 1.30}, "2026-11-08", fresh=True)
    assert profile.load("c").earlier == [] and start() == 4


def test_the_per_size_terms_are_matched_to_the_clusters_calibrations_together(tmp_path, monkeypatch):
    """The newest calibration misreads 2 executors as faster than 3 (0.85 s against 1.0 s a
    superstep; the four before it 1.3 s against 1.0 s): a cold model matched to it alone reads a
    task at 3 slots ~1.5x as long as at 2 -- every job's 2 executors nearly as fast as its 3 --
    matched to the median of the five ratios to the size it matches from (2: at 1 the plan has a
    stage fewer), as long as at 2 (within a few %); ``fresh`` forgets the earlier ones."""
    monkeypatch.setenv("ITERFLOW_HOME", str(tmp_path))

    def calibrated(walls: dict[int, float], at: str, fresh: bool = False) -> ClusterProfile:
        rows = calibration_rows(walls)
        for r in rows:  # 8 tasks a superstep in waves of the slots; a stage fewer at 1 (PageRank's plan)
            long = [1, 0, 0, [r["wall_seconds"] / -(-8 // r["cores"]) * 1e3] * 8]
            r["stage_tasks"] = json.dumps([long] if r["cores"] == 1 else [[0, 0, 0, [1.0] * 8], long])
        profile.save(ClusterProfile("c", SLOWER, measured_at=at, supersteps=rows,
                                    notes={"warmup_supersteps": 1}), fresh=fresh)
        return profile.load("c")

    def per_task(got: ClusterProfile) -> float:
        a = {m: a for m, a, _ in got.contention().sizes}
        return a[3.0] / a[2.0]

    base = {4: 1.0, 3: 1.0, 2: 1.3, 1: 2.4}
    for day in range(1, 5):
        calibrated(base, f"2026-11-0{day}")
    got = calibrated({**base, 2: 0.85}, "2026-11-05")
    assert per_task(got) == pytest.approx(1.0, abs=0.06)
    assert got.steady_walls()[2.0] == pytest.approx([0.85] * 6)  # its own walls stay its own
    assert per_task(calibrated({**base, 2: 0.85}, "2026-11-06", fresh=True)) > 1.4
    # a task's fixed cost at each size it ran, from its own supersteps (the shortest task there:
    # its work is flat): 1 ms a task where a stage of 1 ms tasks ran, a whole task's at 1 slot
    fixed = dict(got.contention().fixed)
    assert set(fixed) == {1.0, 2.0, 3.0, 4.0}
    assert fixed[2.0] == fixed[4.0] == pytest.approx(0.001) and fixed[1.0] == pytest.approx(2.4 / 8, rel=0.05)


def test_the_per_size_terms_meet_the_executors_cpu_share_half_way(tmp_path, monkeypatch):
    """The calibration job's supersteps run as fast at 4 executors as at 2 (its tasks ~1.9x as
    long: its own CPU grew with the task count), while its executors got half a core at 1-3 and
    0.4 at 4 (a task 1.25x as long from the share alone). The per-size term at 4 against 2 is the
    geometric mean of the two (~1.54x); with a share that did not change, the square root of
    the supersteps' term; a profile whose records kept no CPU time keeps the supersteps' alone."""
    monkeypatch.setenv("ITERFLOW_HOME", str(tmp_path))

    def calibrated(share: dict[int, float] | None) -> ClusterProfile:
        rows = calibration_rows({4: 1.0, 3: 1.0, 2: 1.0, 1: 1.8})
        for r in rows:  # 8 tasks a superstep in waves of the slots; a stage fewer at 1 (PageRank's plan)
            long = [1, 0, 0, [r["wall_seconds"] / -(-8 // r["cores"]) * 1e3] * 8]
            r["stage_tasks"] = json.dumps([long] if r["cores"] == 1 else [[0, 0, 0, [1.0] * 8], long])
            if share:
                r["executor_run_seconds"] = 8 * r["wall_seconds"]
                r["executor_cpu_seconds"] = share[r["cores"]] * r["executor_run_seconds"]
        profile.save(ClusterProfile("c", SLOWER, measured_at="2026-11-01", supersteps=rows,
                                    notes={"warmup_supersteps": 1}), fresh=True)
        return profile.load("c")

    def at_4(got: ClusterProfile) -> float:
        a = {m: a for m, a, _ in got.contention().sizes}
        return a[4.0] / a[2.0]

    walls_alone = at_4(calibrated(None))
    assert walls_alone > 1.7
    assert at_4(calibrated({1: 0.5, 2: 0.5, 3: 0.5, 4: 0.5})) == pytest.approx(walls_alone ** 0.5, rel=0.02)
    assert at_4(calibrated({1: 0.5, 2: 0.5, 3: 0.5, 4: 0.4})) == pytest.approx((walls_alone * 1.25) ** 0.5, rel=0.02)
    assert "CPU share" in calibrated({1: 0.5, 2: 0.5, 3: 0.5, 4: 0.4}).contention().how
    assert "share of a core: 1: 0.50, 2: 0.50, 3: 0.50, 4: 0.40" in describe(profile.load("c"))
    assert "share of a core" not in describe(calibrated(None))


def test_a_profile_with_unreadable_earlier_calibrations_is_named(tmp_path):
    path = tmp_path / "profiles.json"
    path.write_text(json.dumps({"c": {"cluster": "c", "task_seconds": {"1": [1]},
                                      "earlier": [{"measured_at": "x", "walls": {"4": "fast"}}]}}))
    with pytest.raises(InputError, match=r"profiles.json \['c'\]: not a cluster profile"):
        profile.load("c", path)


def test_calibration_sizes_span_the_cluster():
    assert sizes_for(1) == [1]
    assert sizes_for(4) == [1, 2, 3, 4]
    assert sizes_for(16) == [1, 2, 8, 12, 16]
    with pytest.raises(ValueError):
        sizes_for(0)


def test_the_calibration_script_counts_a_size_once_its_executors_are_there():
    """Executors asked for at barrier 2 register 3 supersteps later: the size's supersteps count
    from then; a size the cluster never gives is skipped after ``patience`` seconds."""
    from iterflow.loop.records import SuperstepRecord

    def rec(i, e):
        return SuperstepRecord.from_row({"superstep": i, "wall_seconds": 1.0, "executors": e, "cores": e})

    script = Scripted([1, 2, 4, 2], supersteps=2, patience=5.0)
    run = [1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2]  # 2 register 3 supersteps after asked; 4 never come
    asked = [script.decide([rec(i, e)]).executors for i, e in enumerate(run, start=1)]
    assert asked[:2] == [None, 2]  # 2 supersteps at 1, then ask for 2
    assert asked[5:7] == [None, 4]  # supersteps 6 and 7 at 2 (3-5 ran at 1 while they registered)
    assert asked[7:12] == [None] * 5 and script.skipped == [4]  # 5 s waited for 4; then 2, there already
    assert not script.finished
    assert script.decide([rec(14, 2)]).executors is None and script.finished
    assert script.counted[:3] == [[1, 2], [6, 7], []]  # the supersteps each entry measured


def test_the_calibration_warms_up_then_measures_every_size_on_executors_that_stayed():
    """A warm-up at the maximum, the sizes down (a release keeps the warm executors), then
    scale-outs to price them; only the descending pass is measured."""
    assert schedule(4) == [4, 4, 3, 2, 1, 2, 4]
    assert schedule(2) == [2, 2, 1, 2] and schedule(1) == [1, 1]
    from iterflow.loop.records import SuperstepRecord

    script = Scripted([2, 2, 1], supersteps=2, holds=[3, 2, 2])
    asked = [script.decide([SuperstepRecord.from_row({"superstep": i, "wall_seconds": 1.0, "executors": e,
                                                      "cores": e})]).executors
             for i, e in enumerate([2, 2, 2, 2, 2, 1, 1], start=1)]
    assert asked == [None, None, None, None, 1, None, None]
    assert script.counted == [[1, 2, 3], [4, 5], [6, 7]] and script.finished


def test_describe_says_what_a_user_gets():
    text = describe(ClusterProfile("c", SLOWER, job="pagerank g", measured_at="2026-11-25T09:00:00+00:00"))
    assert "cluster 'c'" in text and "beta=" in text
    at4 = float(re.search(r"\b4: ([0-9.]+)x", text).group(1))
    assert at4 == pytest.approx(1.5, rel=0.05)  # the measured 0.15 s against 0.10 s


@pytest.mark.parametrize("args,needle", [
    (["--supersteps", "2"], "--supersteps"),
    (["--max-executors", "0"], "--max-executors"),
    (["--conf", "spark.executor.extraJavaOptions"], "--conf"),
])
def test_bad_calibration_options_fail_before_any_cluster(tmp_path, args, needle):
    env = dict(os.environ, ITERFLOW_HOME=str(tmp_path))
    r = run_cli(["cluster", "calibrate", "--master", "spark://127.0.0.1:1", *args], env, timeout=60)
    assert r.returncode == 2, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("iterflow: error:") and needle in last, r.stderr


def test_the_executors_jvm_options_are_part_of_the_cluster_key(monkeypatch):
    """A C1-only cluster warms fresh executors twice as fast: its prices are not the default JVM's."""
    from iterflow.app.runner import cluster_key
    from iterflow.app.spec import JobSpec

    monkeypatch.delenv("ITERFLOW_JVM_OPTS", raising=False)  # the test session sets it (conftest)

    plain = JobSpec("pagerank", "in", "out", workers=4, cpu_share=0.45)
    c1 = JobSpec("pagerank", "in", "out", workers=4, cpu_share=0.45,
                 conf={"spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1"})
    other = JobSpec("pagerank", "in", "out", workers=4, cpu_share=0.45, conf={"spark.sql.shuffle.partitions": "8"})
    assert cluster_key(plain, "spark://x") == cluster_key(other, "spark://x") == "embedded 4x1 cpu-share 0.45"
    assert cluster_key(c1, "spark://x") == "embedded 4x1 cpu-share 0.45 [executor JVM -XX:TieredStopAtLevel=1]"
    remote = JobSpec("pagerank", "in", "out", master="spark://h:7077", conf=c1.conf)
    assert cluster_key(remote, "spark://h:7077") == "spark://h:7077 [executor JVM -XX:TieredStopAtLevel=1]"
    # ITERFLOW_JVM_OPTS reaches the executors unless the run's --conf sets theirs: the key says which
    monkeypatch.setenv("ITERFLOW_JVM_OPTS", " -XX:TieredStopAtLevel=1 ")
    assert cluster_key(plain, "spark://x") == cluster_key(c1, "spark://x")
    assert cluster_key(JobSpec("pagerank", "in", "out", workers=4, cpu_share=0.45,
                               conf={"spark.executor.extraJavaOptions": "-Xss4m"}), "spark://x") == \
        "embedded 4x1 cpu-share 0.45 [executor JVM -Xss4m]"


def test_jvm_opts_reach_driver_and_executors_unless_the_run_sets_theirs(monkeypatch):
    from iterflow.cluster.session import default_conf

    monkeypatch.delenv("ITERFLOW_JVM_OPTS", raising=False)
    plain = default_conf("spark://127.0.0.1:7077", 2, None)
    assert "spark.executor.extraJavaOptions" not in plain
    assert plain["spark.driver.extraJavaOptions"].startswith("-Dlog4j2.configurationFile=file:")
    monkeypatch.setenv("ITERFLOW_JVM_OPTS", "-XX:TieredStopAtLevel=1")
    c1 = default_conf("spark://127.0.0.1:7077", 2, None)
    assert c1["spark.executor.extraJavaOptions"] == "-XX:TieredStopAtLevel=1"
    assert c1["spark.driver.extraJavaOptions"] == plain["spark.driver.extraJavaOptions"] + " -XX:TieredStopAtLevel=1"


def test_the_key_takes_the_executors_jvm_options_the_session_runs():
    """The run's --conf, else spark-submit's (its properties file froze `cluster start`'s), else the env."""
    from iterflow.app.runner import executor_jvm_opts

    k = "spark.executor.extraJavaOptions"
    env = os.environ.get("ITERFLOW_JVM_OPTS", "").strip()
    assert executor_jvm_opts({k: " -Xss4m "}, {k: "-XX:+UseSerialGC"}) == "-Xss4m"
    assert executor_jvm_opts({}, {k: "-XX:+UseSerialGC"}) == "-XX:+UseSerialGC"
    assert executor_jvm_opts({}, {k: ""}) == ""  # spark-submit set none: none run
    assert executor_jvm_opts({}, None) == executor_jvm_opts({}, {}) == env


@pytest.mark.parametrize("opts, needle", [("-XX:TieredStopAtLevel=1 -Xmx4g", "'-Xmx4g'.*spark.driver.memory"),
                                          ("-Dspark.foo=1", "'-Dspark.foo=1'.*--conf spark.KEY=VALUE")])
def test_jvm_opts_spark_refuses_are_refused_by_name(monkeypatch, opts, needle):
    from iterflow.cluster.jvmopts import extra_jvm_opts
    from iterflow.errors import InputError

    monkeypatch.setenv("ITERFLOW_JVM_OPTS", opts)
    with pytest.raises(InputError, match=f"ITERFLOW_JVM_OPTS: {needle}"):
        extra_jvm_opts()
