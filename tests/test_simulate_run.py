"""``iterflow simulate --run`` (issue 14, items 2 and 4): Spark-free, seconds. Known answers on
synthetic records, the real policy objects' decision logs, a recorded run reproduced at its
own size (tolerance from the data) and its recorded decisions, and bad input."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from iterflow.app.cli import main
from iterflow.model.tasks import makespan
from iterflow.policies import make_policy
from iterflow.simulate.calibrate import calibrate, from_profile, load_profile, policy_of, repeatability
from iterflow.simulate.cluster import Params, learn, plan_of, simulate
from iterflow.simulate.recorded import cost, load, runtime

DATA = Path(__file__).parent / "fixtures"
ZERO = Params(0.0, 0.0, 0.0, 0.0)


def record(tmp_path: Path, tasks: list[list[float]], n: int = 4, outside: float = 0.5, executors: int = 1,
           name: str = "job.csv", partitions: int = 8) -> Path:
    """A static run at ``executors`` x 1 core: ``n`` supersteps, each with the stages ``tasks``
    (seconds) and ``outside`` seconds outside tasks, at ``partitions``."""
    st = json.dumps([[k, 0, 0, [t * 1e3 for t in s]] for k, s in enumerate(tasks)])
    wall = outside + sum(makespan(s, executors) for s in tasks)
    rows = [{"superstep": i, "wall_seconds": wall, "executors": executors, "cores": executors, "partitions": partitions,
             "work": 100.0, "stage_tasks": st} for i in range(1, n + 1)]
    path = tmp_path / name
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def cli(args: list[str], capsys) -> tuple[int, str, str]:
    rc = main(["simulate", *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


# ------------------------------------------------------------------------- known answers
def test_eight_one_second_tasks_at_one_and_four_slots(tmp_path):
    run = load(str(record(tmp_path, [[1.0] * 8])))[0]
    one = simulate(run, make_policy("static"), 1, 1, ZERO)
    four = simulate(run, make_policy("static"), 4, 1, ZERO)
    assert [r.wall_seconds for r in one.records] == pytest.approx([8.5] * 4)
    assert [r.wall_seconds for r in four.records] == pytest.approx([2.5] * 4)
    assert four.executor_seconds == pytest.approx(4 * 4 * 2.5)


def test_a_run_whose_partitions_followed_its_cores_is_re_cut_at_other_sizes(tmp_path):
    """Recorded at 1 executor with 1 partition (one task a stage): at 4, four tasks a stage, the
    work split and each task paying the fixed cost (the shortest task recorded, 0.1 s)."""
    run = load(str(record(tmp_path, [[4.1], [0.1]], partitions=1)))[0]
    one = simulate(run, make_policy("static"), 1, 1, ZERO)
    four = simulate(run, make_policy("static"), 4, 1, ZERO)
    assert [r.wall_seconds for r in one.records] == pytest.approx([4.7] * 4)
    assert [r.wall_seconds for r in four.records] == pytest.approx([0.5 + 1.1 + 0.1] * 4)
    assert {r.ran.partitions for r in four.records} == {4}
    # recorded at a fixed count (8 partitions on 1 core), the count stays: one 4.1 s task cannot split
    fixed = load(str(record(tmp_path, [[4.1], [0.1]], partitions=8, name="fixed.csv")))[0]
    assert simulate(fixed, make_policy("static"), 4, 1, ZERO).records[0].wall_seconds == pytest.approx(4.7)


def test_weak_scaling_a_run_that_followed_its_cores_cuts_one_task_a_core(tmp_path):
    """The same record weak-scaled x4: the loop cuts 4x the input into one partition a core, so
    at 4 executors a stage is 4 tasks of 0.1 + 4 s (the recorded superstep on 4x the data and
    the slots), at 1 one task of 0.1 + 16 s -- not 16 tasks of the recorded split in 4 rounds."""
    run = load(str(record(tmp_path, [[4.1], [0.1]], partitions=1)))[0]
    four = simulate(run, make_policy("static"), 4, 1, ZERO, scale_input=4)
    one = simulate(run, make_policy("static"), 1, 1, ZERO, scale_input=4)
    assert [r.wall_seconds for r in four.records] == pytest.approx([0.5 + 4.1 + 0.1] * 4)
    assert [r.wall_seconds for r in one.records] == pytest.approx([0.5 + 16.1 + 0.1] * 4)
    assert {r.ran.partitions for r in four.records} == {4}
    assert [len(s[3]) for s in json.loads(four.records[0].stats.stage_tasks)] == [4, 4]


def test_stages_run_one_after_the_other(tmp_path):
    """Two stages of 3 x 1 s on 2 slots: 2 s each (not 3 s for 6 tasks pooled)."""
    run = load(str(record(tmp_path, [[1.0] * 3, [1.0] * 3], outside=0.0)))[0]
    assert simulate(run, make_policy("static"), 2, 1, ZERO).records[0].wall_seconds == pytest.approx(4.0)


def test_registration_latency_delays_the_gain(tmp_path):
    """A target policy scales 1 -> 4 at barrier 1; with executors registering after 3 s the
    next superstep runs 3 tasks alone, then 5 tasks on 4 slots: 3 + 1 + 1 = 5 s (2 s without)."""
    run = load(str(record(tmp_path, [[1.0] * 8], n=4, outside=0.0)))[0]

    def go(latency: float):
        pol = make_policy("target", target_seconds=10.0, max_executors=4, start_executors=1,
                          wait_count=1, warmup=0, cooldown=0, rescale_seconds=0.0)
        return simulate(run, pol, 1, 1, Params(latency, 0.0, 0.0, 0.0)), pol

    fast, _ = go(0.0)
    slow, pol = go(3.0)
    assert fast.records[0].decided.decision == slow.records[0].decided.decision == "up"
    assert fast.records[1].wall_seconds == pytest.approx(2.0)
    assert slow.records[1].wall_seconds == pytest.approx(5.0)
    assert slow.records[1].executors == 4 and slow.runtime > fast.runtime
    # the decisions are the policy object's own: its log holds every change, reason and all
    changes = [(s, d, why) for s, d, why in slow.decisions if d != "same"]
    assert changes and changes == [tuple(e) for e in pol.log]


def test_static_sweep_is_monotone_and_weak_scaling_is_explicit(tmp_path, capsys):
    path = record(tmp_path, [[0.2, 1.5, 0.7, 0.3, 2.0, 0.9, 0.4, 1.1, 0.6, 0.8]])
    rc, out, err = cli(["--run", str(path), "--sweep", "--executors", "1", "--max-executors", "6", "--json"], capsys)
    assert rc == 0 and err == ""
    doc = json.loads(out)
    static = [r["runtime_seconds"] for r in doc["sweep"] if r["policy"].startswith("static-")]
    assert len(static) == 6 and all(a >= b for a, b in zip(static, static[1:]))
    assert doc["cluster"]["weak_scaling"] is False
    rc, out, _ = cli(["--run", str(path), "--policy", "static", "--executors", "1", "--scale-input", "3", "--json"], capsys)
    scaled = json.loads(out)
    assert rc == 0 and scaled["cluster"]["weak_scaling"] is True
    assert scaled["result"]["runtime_seconds"] > static[0]  # 3x the tasks on one slot


def test_a_sweep_is_drawn_as_the_pareto_figure_with_the_recorded_run_beside_it(tmp_path, capsys):
    """``--figure``: the static sizes joined as the frontier, each policy a point, the recorded run
    a star -- at the coordinates the JSON gives."""
    path = record(tmp_path, [[0.2, 1.5, 0.7, 0.3, 2.0, 0.9, 0.4, 1.1, 0.6, 0.8]])
    png = tmp_path / "sweep.png"
    rc, out, err = cli(["--run", str(path), "--sweep", "--executors", "1", "--max-executors", "4",
                        "--target-seconds", "5", "--json", "--figure", str(png)], capsys)
    assert rc == 0 and err == "" and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    doc = json.loads(out)
    from matplotlib.figure import Figure
    from iterflow.app.report import plot_sweep

    class Run:  # what the figure reads of a simulated run
        def __init__(self, r: dict) -> None:
            self.runtime, self.executor_seconds = r["runtime_seconds"], r["executor_seconds"]

    ax = Figure().add_subplot()
    plot_sweep(ax, [(r["policy"], Run(r)) for r in doc["sweep"]], (3.0, 4.0, "recorded"))
    frontier = ax.get_lines()[0].get_xydata().tolist()
    assert frontier == [[r["executor_seconds"], r["runtime_seconds"]] for r in doc["sweep"]
                        if r["policy"].startswith("static-")]
    points = {c.get_label(): c.get_offsets().tolist() for c in ax.collections}
    assert points["recorded"] == [[3.0, 4.0]]
    assert {k for k in points if k != "recorded"} == {f"simulated {r['policy']}" for r in doc["sweep"]
                                                       if not r["policy"].startswith("static-")}


def test_parameters_say_where_they_came_from(tmp_path):
    run = load(str(DATA / "wcc_release_surplus.csv"))
    p = learn([r.records for r in run], {"register_seconds": 7.0})
    assert p.register_seconds == 7.0 and p.sources["register_seconds"] == "given"
    assert p.sources["remove_seconds"].startswith("learned")
    downs = [r.actuated.actuation_seconds for x in run for r in x.records
             if r.decided is not None and r.decided.decision == "down"]
    assert p.remove_seconds == pytest.approx(sorted(downs)[len(downs) // 2])


# ------------------------------------------------------------------ recorded runs (fixtures)
@pytest.mark.parametrize("fixture", ["wcc_stage_tasks.csv", "wcc_release_surplus.csv"])
def test_a_static_record_reproduces_itself(fixture):
    """At its own size a static record's replay differs only where its tasks' schedule is
    longer than the measured superstep (the time outside tasks cannot go below 0)."""
    for run in load(str(DATA / fixture)):
        if len(set(run.sizes)) != 1:
            continue
        e, c = run.sizes[0], run.cores_per_executor
        sim = simulate(run, make_policy("static"), e, c, ZERO)
        clipped = sum(max(0.0, sum(makespan(st, s.cores) for st in s.stages) - s.wall) for s in run.steps)
        assert abs(sim.runtime - runtime(run.records)) <= clipped + 1e-9 * runtime(run.records)
        assert abs(sim.executor_seconds - cost(run.records)) <= e * clipped + 1e-6


def test_an_adaptive_record_replayed_from_itself_decides_as_recorded():
    """stop65all's WCC ``efficiency`` run, replayed at its start size with what the driver had:
    its warm start (the session's static runs before it), the cluster calibration's parameters
    and prices, ``pareto.py``'s options and a horizon it did not know (WCC converges). Its
    supersteps up to its first rescale are the recorded ones, so every decision there must be the
    recorded one; after it, the simulated supersteps at 1 executor are replayed, and the
    decisions must still agree (they keep 1)."""
    runs = load(str(DATA / "pareto_stop65all_wcc.csv"))
    profile = load_profile(DATA / "pareto_stop65all_cluster_profile.json")
    k = next(i for i, r in enumerate(runs) if policy_of(r) == "efficiency")
    eff, past = runs[k], [rec for r in runs[:k] if policy_of(r) == "static" for rec in r.records]
    assert len(past) == 4 * len(eff.records)  # the four static sizes of the first pass
    pol = make_policy("efficiency", max_executors=4, start_executors=4)
    sim = simulate(eff, pol, eff.steps[0].executors, 1, from_profile(profile), plan=plan_of(eff), past=past,
                   prices=profile.records())
    assert "down" in [r.decided.decision for r in eff.records]
    assert [r.decided.decision for r in sim.records] == [r.decided.decision for r in eff.records]
    assert [r.executors for r in sim.records] == [r.executors for r in eff.records]


def test_calibration_rows_from_the_fixture():
    runs = load(str(DATA / "wcc_release_surplus.csv"))
    base = next(r for r in runs if r.name == "wcc/profile-1/0")
    rows = calibrate(base, [r for r in runs if r is not base], learn([r.records for r in runs]), 4,
                     {"efficiency": {"rule": "knee", "threshold": 0.1, "slowdown_bound": 0.1}})
    assert {r["policy"] for r in rows} == {"static", "efficiency"}
    eff = next(r for r in rows if r["policy"] == "efficiency")
    assert 0.0 <= eff["same_decisions"] <= 1.0 and eff["barriers"] == len(base.steps)
    for r in rows:
        assert r["runtime_error"] == pytest.approx(r["sim_runtime_s"] / r["real_runtime_s"] - 1)


def test_repeatability_predicts_each_static_run_from_its_sizes_other_runs(tmp_path):
    """The oracle ceiling of the calibration: a static run's runtime from the geometric mean of
    the other runs of its size and superstep count -- never from itself, never across sizes,
    and adaptive runs are not static runs."""
    rows = []
    for policy, rep, executors, wall in [("static-2", 0, 2, 1.0), ("static-2", 1, 2, 1.21), ("static-2", 2, 2, 1.1),
                                         ("static-4", 0, 4, 0.5), ("target", 0, 2, 0.7)]:
        rows += [{"superstep": i, "wall_seconds": wall, "executors": executors if policy != "target" or i < 3 else 1,
                  "cores": executors, "partitions": executors, "job": "wcc", "policy": policy, "rep": rep,
                  "stage_tasks": json.dumps([[0, 0, 0, [wall * 900.0]]])}
                 for i in range(1, 5)]
    path = tmp_path / "passes.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    errors = repeatability(load(str(path)))
    assert len(errors) == 3  # static-4 alone has nothing to be predicted from; target is no static run
    t = [1.0, 1.21, 1.1]
    expected = [((t[1] * t[2]) ** 0.5) / t[0] - 1, ((t[0] * t[2]) ** 0.5) / t[1] - 1, ((t[0] * t[1]) ** 0.5) / t[2] - 1]
    assert sorted(errors) == pytest.approx(sorted(expected), rel=1e-6)
    assert max(abs(e) for e in errors) > 0.1  # the 21 % spread shows: a repeat is no better than that


# ------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("case", ["missing", "columns", "executors", "both", "static-option", "scale", "trace-only",
                                  "figure-no-sweep", "figure-dir", "figure-kind"])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, case):
    good = str(record(tmp_path, [[1.0] * 4]))
    bad = tmp_path / "bad.csv"
    pd.DataFrame([{"superstep": 1, "wall_seconds": 1.0}]).to_csv(bad, index=False)
    args, named = {
        "missing": (["--run", str(tmp_path / "nope.csv"), "--policy", "static", "--executors", "1"], "nope.csv"),
        "columns": (["--run", str(bad), "--policy", "static", "--executors", "1"], "executors"),
        "executors": (["--run", good, "--policy", "static", "--executors", "0"], "--executors"),
        "both": (["--run", good, "--policy", "static", "--sweep", "--executors", "1"], "--sweep"),
        "static-option": (["--run", good, "--policy", "static", "--executors", "1", "--target-seconds", "5"],
                          "--target-seconds"),
        "scale": (["--run", good, "--policy", "static", "--executors", "1", "--scale-input", "0"], "--scale-input"),
        "trace-only": (["--run", good, "--policy", "static", "--executors", "1", "--format", "ellis"], "--format"),
        "figure-no-sweep": (["--run", good, "--policy", "static", "--executors", "1", "--figure", str(tmp_path / "f.png")],
                            "--figure"),
        "figure-dir": (["--run", good, "--sweep", "--executors", "1", "--figure", str(tmp_path / "no" / "f.png")],
                       "--figure"),
        "figure-kind": (["--run", good, "--sweep", "--executors", "1", "--figure", str(tmp_path / "f.pdf")], "--figure"),
    }[case]
    rc, out, err = cli([*args, "--json"], capsys)
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("iterflow: error:") and named in err


def test_a_cluster_profile_that_is_missing_or_no_json_is_named(tmp_path):
    """The experiments' ``--profile`` (calibrate_simulator, target_whatif) took a traceback for a
    mistyped path; now one error naming the file, and the line where the JSON broke."""
    from iterflow.errors import InputError
    with pytest.raises(InputError, match="nope.json: cannot read the cluster profile"):
        load_profile(tmp_path / "nope.json")
    (tmp_path / "cut.json").write_text('{"cluster": "x",\n "task_seconds": ')
    with pytest.raises(InputError, match=r"cut.json: line 2: not JSON"):
        load_profile(tmp_path / "cut.json")
    (tmp_path / "other.json").write_text('{"cluster": "x"}')
    with pytest.raises(InputError, match="other.json: not a cluster profile"):
        load_profile(tmp_path / "other.json")


def test_trace_and_run_are_mutually_exclusive(tmp_path, capsys):
    good = str(record(tmp_path, [[1.0] * 4]))
    with pytest.raises(SystemExit) as exc:
        main(["simulate", "--run", good, "--trace", good, "--policy", "static", "--executors", "1"])
    assert exc.value.code == 2 and capsys.readouterr().out == ""


def test_other_jobs_rescales_price_the_policy_and_never_reach_its_model():
    """``prices``: records of other jobs on the cluster. The policy learns what rescales cost
    from them (as ``iterflow run`` does from its store); the model, which predicts *this* job,
    must not see their supersteps (another job's times made the model's error ±20000 %)."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from fakes import ScriptedPolicy

    runs = {r.name: r for r in load(str(DATA / "wcc_release_surplus.csv"))}
    base, other = runs["wcc/profile-1/0"], runs["wcc/efficiency/0"].records

    class Spy(ScriptedPolicy):
        def decide(self, history, model=None, **kw):
            self.models = [*getattr(self, "models", []), model]
            return super().decide(history, model, **kw)

    pol = Spy()
    simulate(base, pol, 1, 1, ZERO, prices=other)
    assert pol.learned and len(pol.learned[0]) == len(other)
    model = pol.models[-1]
    assert set(model.replay.times) == {1.0}  # only this run's supersteps, at its 1 slot
    assert not model.replay.before


def test_the_cold_superstep_after_a_scale_in_is_learned_apart_from_a_scale_outs():
    """Fresh executors' JIT (after a scale-out) and a re-read cache (after a scale-in) are
    different costs: learned separately, each applied after its own kind of rescale."""
    from iterflow.loop.records import records

    def row(i, e, wall, **kw):
        return {"superstep": i, "executors": e, "cores": e, "wall_seconds": wall, "work": 1.0, **kw}

    hist = records([row(1, 4, 1.0), row(2, 4, 1.0, decision="down", actuation_seconds=0.2),
                    row(3, 2, 3.0, cold_seconds=1.0), row(4, 2, 2.0, decision="up", actuation_seconds=5.0),
                    row(5, 4, 5.0, cold_seconds=4.0), row(6, 4, 1.0)])
    p = learn([hist])
    assert p.cold_in_factor == pytest.approx(0.5) and p.cold_factor == pytest.approx(4.0)
    assert "after scale-ins" in p.sources["cold_in_factor"]


def test_a_scale_ins_transient_is_learned_by_age_and_replayed_after_the_first_superstep(tmp_path):
    """The supersteps a run found still cold after a release (``iterflow.model.live.settling``)
    are learned as the transient's factors by age (the median over the scale-ins, 0 where one
    had settled) -- not as scale-outs' cold supersteps -- and replayed after a simulated scale-in."""
    from iterflow.loop.reconfig import Reconfiguration
    from iterflow.loop.records import records

    def row(i, e, wall, **kw):
        return {"superstep": i, "executors": e, "cores": e, "wall_seconds": wall, "work": 1.0, **kw}

    slow = records([row(1, 3, 1.0), row(2, 3, 1.0, decision="down", actuation_seconds=0.2, executors_requested=2),
                    row(3, 2, 4.0, cold_seconds=3.0), row(4, 2, 3.0, cold_seconds=2.0), row(5, 2, 1.0)])
    quick = records([row(1, 3, 1.0), row(2, 3, 1.0, decision="down", actuation_seconds=0.2, executors_requested=2),
                     row(3, 2, 2.0, cold_seconds=1.0), row(4, 2, 1.0), row(5, 2, 1.0)])
    p = learn([slow, quick])
    assert p.cold_factor == 0.0 and p.cold_in_factor == pytest.approx((3.0 + 1.0) / 2)
    assert p.settle_factors[:2] == pytest.approx([(2.0 + 0.0) / 2, 0.0])
    assert any("transient" in line for line in p.describe())

    class InAt2:
        name = "in-at-2"

        def learn_rescales(self, *a, **k): ...

        def plan_start(self, *a, **k): return None

        def decide(self, history, model, plan=None):
            if len(history) == 2:
                return Reconfiguration("release", executors=1)
            return Reconfiguration.none("keep")

    run = load(str(record(tmp_path, [[1.0]], n=5, outside=0.0)))[0]
    params = Params(0.0, 0.0, 0.0, 0.0, settle_factors=(1.0, 0.5))
    walls = [r.wall_seconds for r in simulate(run, InAt2(), 2, 1, params).records]
    assert walls == pytest.approx([1.0, 1.0, 1.0, 2.0, 1.5])  # the first at 1 (factor 0), then 1.0, 0.5


def test_a_release_to_one_executor_is_learned_and_replayed_apart_from_rebuilding_ones(tmp_path):
    """A release to one executor rebuilds nothing at its barrier and reads the state's copy in
    its first superstep (stop 49): its relayout and that superstep's excess *in seconds* are
    learned apart from the rebuilding releases' (relayout, excess as a factor), and a simulated
    release to one pays those; a release to two still pays the rebuilding ones. Without a
    recorded release to one, it is simulated as a rebuilding one."""
    from iterflow.loop.reconfig import Reconfiguration
    from iterflow.loop.records import records

    def row(i, e, wall, **kw):
        return {"superstep": i, "executors": e, "cores": e, "wall_seconds": wall, "work": 1.0, **kw}

    def release(before, after, relayout, first, cold):
        return records([row(1, before, 1.0), row(2, before, 1.0, decision="down", actuation_seconds=0.5,
                                                   executors_requested=after, relayout_seconds=relayout),
                        row(3, after, first, cold_seconds=cold), row(4, after, 1.0), row(5, after, 1.0)])

    light = [release(3, 1, 0.1, 3.0, 2.0), release(2, 1, 0.2, 2.0, 1.0), release(4, 1, 0.3, 2.5, 1.5)]
    rebuilt = [release(4, 2, 4.0, 1.5, 0.5)]
    p = learn([*light, *rebuilt])
    assert p.light_relayout_seconds == pytest.approx(0.2) and p.light_cold_seconds == pytest.approx(1.5)
    assert p.relayout_seconds == pytest.approx(4.0) and p.cold_in_factor == pytest.approx(0.5)
    assert any("release to one executor" in line for line in p.describe())
    assert learn(rebuilt).light_cold_seconds is None

    class InAt2:
        name = "in-at-2"

        def __init__(self, to):
            self.to = to

        def learn_rescales(self, *a, **k): ...

        def plan_start(self, *a, **k): return None

        def decide(self, history, model, plan=None):
            if len(history) == 2:
                return Reconfiguration("release", executors=self.to)
            return Reconfiguration.none("keep")

    run = load(str(record(tmp_path, [[1.0]], n=4, outside=0.0)))[0]
    params = Params(0.0, 0.5, 4.0, 0.0, cold_in_factor=0.5, light_relayout_seconds=0.2, light_cold_seconds=1.5)
    to_one = simulate(run, InAt2(1), 3, 1, params).records
    assert [r.wall_seconds for r in to_one] == pytest.approx([1.0, 1.0, 1.0 + 1.5, 1.0])  # + seconds, not x
    assert to_one[1].actuated.relayout_seconds == pytest.approx(0.2)
    to_two = simulate(run, InAt2(2), 3, 1, params).records
    assert [r.wall_seconds for r in to_two] == pytest.approx([1.0, 1.0, 1.5, 1.0])
    assert to_two[1].actuated.relayout_seconds == pytest.approx(4.0)
    unknown = simulate(run, InAt2(1), 3, 1, Params(0.0, 0.5, 4.0, 0.0, cold_in_factor=0.5)).records
    assert unknown[1].actuated.relayout_seconds == pytest.approx(4.0) and unknown[2].wall_seconds == pytest.approx(1.5)


def test_a_converged_run_is_replayed_without_its_superstep_count_as_bound():
    # the real run under a tolerance did not know it would stop at 33 (max_iterations 1000):
    # a replay told so plans releases the real run could not; one that stopped at its bound
    # under a tolerance keeps that bound
    from iterflow.simulate.cluster import plan_of
    from iterflow.simulate.recorded import runs_of

    df = pd.read_csv(DATA / "wcc_release_surplus.csv")
    df = df[df["run_id"] == df["run_id"].iloc[0]].assign(remaining_estimated=True)
    converged = runs_of(df, "converged.csv")[0]
    assert converged.records[-1].decided.reason.startswith("converged")
    plan = plan_of(converged)
    assert plan.max_iterations is None and plan.tol == converged.steps[-1].delta
    at_bound = runs_of(df.assign(reason=df["reason"].where(df.index != df.index[-1], "nothing left")), "bound.csv")[0]
    assert plan_of(at_bound).max_iterations == len(at_bound.steps)
    fixed = runs_of(df.assign(remaining_estimated=False), "fixed.csv")[0]
    assert plan_of(fixed).max_iterations == len(fixed.steps) and plan_of(fixed).tol is None


def test_a_withdrawn_scale_out_is_not_waited_for(tmp_path):
    """The driver lowers its request when a policy withdraws a scale-out (stop 36w replayed:
    the simulator kept the withdrawn executors coming, and the run went to 4 at superstep 18 where
    it had asked for 2 since superstep 5). Asked 1 -> 4 at barrier 1 (executors take 10 s),
    withdrawn at barrier 2 (back to the 1 it runs on): none is waited for."""
    import sys

    from iterflow.policies.base import Reconfiguration

    sys.path.insert(0, str(Path(__file__).parent))
    from fakes import ScriptedPolicy

    run = load(str(record(tmp_path, [[1.0] * 8], n=8, outside=0.0)))[0]
    asked = {1: Reconfiguration(executors=4, reason="up"), 2: Reconfiguration(executors=1, reason="withdraw")}
    sim = simulate(run, ScriptedPolicy(asked), 1, 1, Params(10.0, 0.0, 0.0, 0.0))
    assert [r.executors for r in sim.records] == [1] * 8
    assert sim.records[1].actuated.executors_pending == 0
    lowered = {1: asked[1], 2: Reconfiguration(executors=2, reason="fewer")}  # 4 asked, then 2: one comes
    part = simulate(run, ScriptedPolicy(lowered), 1, 1, Params(10.0, 0.0, 0.0, 0.0))
    assert part.records[1].actuated.executors_pending == 1 and max(r.executors for r in part.records) == 2
    kept = simulate(run, ScriptedPolicy({1: asked[1]}), 1, 1, Params(10.0, 0.0, 0.0, 0.0))
    assert [r.executors for r in kept.records][-1] == 4  # not withdrawn: all four come



# ------------------------------------------------------------- calibrated on real runs (issue 14 item 4)
LOOKUP_SESSIONS = ("stop53w20", "stop53w20d", "stop54w20")  # WCC R-MAT 20 with the tail's lookup


def test_static_sizes_simulated_from_static_1_come_within_15_percent_of_their_real_runs():
    """Three Pareto sessions' static WCC runs (fixtures, both passes of each size) and their
    cluster calibrations: each size 2-4 simulated from the session's first static-1 run, against
    the median of its real runs. With a task's fixed cost read off the shortest task, 1 of these
    9 came within 15 % (the tail's 3 tasks merged into one 3x as long: every size read ~20-30 %
    too fast, relative to 1); fitted where work spans (``tasks.task_fixed_cost``), 7."""
    within, errors = 0, []
    for tag in LOOKUP_SESSIONS:
        runs = load(str(DATA / f"pareto_{tag}_static.csv"))
        params = from_profile(load_profile(DATA / f"pareto_{tag}_cluster_profile.json"))
        base = next(r for r in runs if policy_of(r) == "static" and set(r.sizes) == {1})
        for e in (2, 3, 4):
            real = float(np.median([runtime(r.records) for r in runs if set(r.sizes) == {e}]))
            sim = simulate(base, make_policy("static"), e, base.cores_per_executor, params)
            errors.append(sim.runtime / real - 1)
            within += abs(errors[-1]) <= 0.15
    assert within >= 6, [f"{x:+.0%}" for x in errors]


def test_adaptive_runs_replayed_from_a_static_run_at_their_start_decide_alike_and_come_within_the_sessions_noise():
    """A Pareto session's adaptive WCC runs (stop65all, made by the policies as committed:
    ``efficiency`` and ``fastest`` started at 3 as planned, ``target`` cold at ten targets, all
    released to 1), each replayed from the session's static-3 runs with the cluster
    calibration's parameters and the options ``pareto.py`` gave them (``fastest``: 1.2x
    static-1; ``target`` cold): at least 90 % of the barriers decide alike (the issue's goal:
    80 %; measured 98 %), and the replays come within 15 % of the real runs on both runtime and
    executor-seconds at least as often as the session's own static runs come within 15 % of
    their repeat (the noise any one real run carries: there 4 of 8; the replays 7 of 12). The
    issue's 15 % for 80 % of runs held on a quieter session's runs of older policies (stop55w20t10,
    10 of 12); runs made by an earlier rule decide as it did, so the fixture is refreshed with
    the policies (``experiments/cut_fixture.py``)."""
    runs = load(str(DATA / "pareto_stop65all_wcc.csv"))
    profile = load_profile(DATA / "pareto_stop65all_cluster_profile.json")
    bases = [r for r in runs if policy_of(r) == "static" and r.sizes[0] == 3]
    adaptive = [r for r in runs if policy_of(r) != "static"]
    assert len(bases) == 2 and len(adaptive) == 12
    per_run = [[row for base in bases
                for row in calibrate(base, [run], from_profile(profile), 4,
                                     {"fastest": {"budget": 1.2, "baseline_executors": 1}}, cold=("target",),
                                     prices=profile.records(), past_sizes=(1, 2, 3, 4))] for run in adaptive]
    rows = [r for rs in per_run for r in rs]
    assert len(rows) == 24 and {r["policy"] for r in rows} == {"efficiency", "fastest", "target"}

    def gmean_err(rs, real, sim):  # a run against the geometric mean of its two replays (a session drifts)
        return float(np.exp(np.mean([np.log(r[sim]) for r in rs]))) / rs[0][real] - 1
    within = [abs(gmean_err(rs, "real_runtime_s", "sim_runtime_s")) <= 0.15
              and abs(gmean_err(rs, "real_executor_s", "sim_executor_s")) <= 0.15 for rs in per_run]
    noise = [abs(e) <= 0.15 for e in repeatability(runs)]
    assert len(within) == 12 and len(noise) == 8
    assert np.mean(within) >= np.mean(noise), (sum(within), sum(noise))
    assert float(np.mean([r["same_decisions"] for r in rows])) >= 0.9


def test_the_table_says_which_parameters_nothing_recorded_measured(tmp_path, capsys):
    """A record with no release to one executor learns no light-release price: the table says so
    (it failed formatting ``None`` as a number, and the command printed "Spark failed")."""
    path = record(tmp_path, [[0.2, 1.5, 0.7, 0.3]])
    rc, out, err = cli(["--run", str(path), "--policy", "target", "--target-seconds", "9", "--executors", "1",
                        "--max-executors", "4"], capsys)
    assert rc == 0 and err == ""
    assert "light_cold_seconds: none learned" in out and "register_seconds = 10" in out


def test_a_failure_outside_spark_is_not_called_sparks():
    from iterflow.app.sparkerrors import describe

    message, status = describe(TypeError("unsupported format string passed to NoneType.__format__"))
    assert status == 1 and message.startswith("internal error: TypeError") and "Spark" not in message
    try:
        raise TypeError("a converter failed")
    except TypeError as inner:
        wrapped = RuntimeError("org.apache.spark.SparkException: Job aborted")
        wrapped.__cause__ = inner
    assert describe(wrapped)[0].startswith("Spark failed: RuntimeError")
