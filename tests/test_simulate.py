"""``iterflow simulate --trace`` (issue 14, item 3): Spark-free, on small synthetic Ellis traces
whose right answers are known, plus the contract's shape on the real traces when present."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from iterflow.app.cli import main
from iterflow.model.traces import ELLIS_HEADER
from iterflow.simulate.evaluate import evaluate
from iterflow.simulate.replay import Settings, replay_policy, replay_static
from iterflow.simulate.trace import EllisTrace, ProfileModel

from conftest import TRACES

ELLIS = TRACES / "ellis"
KEYS = {"violation_rate", "mean_overshoot", "executor_seconds"}


def job_seconds(scale_out: int, job: int) -> float:
    """Setup job 10 s at any size; iterations 1 s + 80 s of parallel work."""
    return 10.0 if job == 0 else 1.0 + 80.0 / scale_out


def write_trace(path: Path, profile: list[tuple[int, list[float]]],
                recorded: list[list[tuple[int, float]]] = ()) -> Path:
    """An Ellis file: profiling runs ``(scale_out, job seconds)``, then recorded runs
    ``[(scale_out, seconds) per job]``."""
    lines = ["|".join(ELLIS_HEADER)]
    rid = 0
    runs = [[(s, t) for t in secs] for s, secs in profile] + [list(r) for r in recorded]
    for run, jobs in enumerate(runs, start=1):
        for job, (s, t) in enumerate(jobs):
            rid += 1
            lines.append(f"{rid}|App|2021-01-01 00:00:00|2021-01-01 00:10:00|{run}|{job}|"
                         f"2021-01-01 00:00:00|2021-01-01 00:00:01|{round(t * 1000)}|{s}")
    path.write_text("\n".join(lines) + "\n")
    return path


def synthetic(tmp_path: Path, jobs: int = 6, sizes=(4, 8, 16), recorded=()) -> Path:
    prof = [(s, [job_seconds(s, j) for j in range(jobs)]) for s in sizes]
    return write_trace(tmp_path / "synthetic.csv", prof, recorded)


def noisy(tmp_path: Path) -> Path:
    """Two profiling runs per size whose iterations differ, so replays depend on the draws."""
    rng = np.random.default_rng(1)
    prof = [(s, [job_seconds(s, j) * float(rng.uniform(0.7, 1.3)) for j in range(8)])
            for s in (4, 8, 16) for _ in range(2)]
    return write_trace(tmp_path / "noisy.csv", prof)


def cli(args: list[str], capsys) -> tuple[int, str, str]:
    rc = main(["simulate", "--format", "ellis", "--policy", "target", *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


# ----------------------------------------------------------------------------- the contract
def test_json_shape_through_the_cli(tmp_path, capsys):
    rec = [(8, job_seconds(8, j)) for j in range(6)]
    path = synthetic(tmp_path, recorded=[rec])
    rc, out, err = cli(["--trace", str(path), "--targets", "4", "--replays", "2", "--profiling-runs", "3", "--json"],
                       capsys)
    assert rc == 0
    doc = json.loads(out)  # the whole of stdout is one JSON object
    assert {"policy", "static", "recorded"} <= set(doc)
    assert set(doc["policy"]) == KEYS and set(doc["recorded"]) == KEYS
    assert set(doc["static"]) == {"4", "8", "16"}
    assert all(set(v) == KEYS for v in doc["static"].values())
    assert all(isinstance(doc[part][k], float) for part in ("policy", "recorded") for k in KEYS)
    assert doc["recorded"]["executor_seconds"] == pytest.approx(8 * sum(job_seconds(8, j) for j in range(6)), rel=1e-6)
    assert len(doc["targets"]) == 4


def test_targets_spread_evenly_between_largest_and_smallest_medians(tmp_path):
    # two runs at the largest size: the target end is their median
    prof = [(16, [job_seconds(16, j) for j in range(6)]), (16, [job_seconds(16, j) + 2.0 for j in range(6)]),
            (8, [job_seconds(8, j) for j in range(6)]), (4, [job_seconds(4, j) for j in range(6)])]
    tr = EllisTrace.from_file(write_trace(tmp_path / "t.csv", prof))
    fast = np.median([sum(job_seconds(16, j) for j in range(6)), sum(job_seconds(16, j) + 2 for j in range(6))])
    slow = sum(job_seconds(4, j) for j in range(6))
    t = tr.targets(7)
    assert t[0] == pytest.approx(fast) and t[-1] == pytest.approx(slow)
    assert np.allclose(np.diff(t), (slow - fast) / 6)
    assert tr.targets(1)[0] == pytest.approx((fast + slow) / 2)


def test_human_output_has_a_table_per_target_with_decisions(tmp_path, capsys):
    rc, out, _ = cli(["--trace", str(synthetic(tmp_path)), "--targets", "3", "--replays", "2"], capsys)
    assert rc == 0
    assert out.count("\ntarget ") == 3
    assert "decisions" in out and "before job 0: start: plan:" in out
    assert "static 4" in out and "static 16" in out and "recorded" in out


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("case", ["missing", "header", "line", "targets", "replays", "quantile", "sweep", "figure"])
def test_bad_input_is_one_line_exit_2_and_nothing_on_stdout(tmp_path, capsys, case):
    good = synthetic(tmp_path)
    path, extra, named = str(good), [], None
    if case == "missing":
        path = named = str(tmp_path / "nope.csv")
    elif case == "header":
        (tmp_path / "h.csv").write_text("Nodes,Runtime\n4,10\n")
        path, named = str(tmp_path / "h.csv"), f"{tmp_path / 'h.csv'}:1"
    elif case == "line":
        lines = good.read_text().splitlines()
        lines[3] = lines[3].replace("|App|", "|App|x|")  # an extra field
        (tmp_path / "l.csv").write_text("\n".join(lines) + "\n")
        path, named = str(tmp_path / "l.csv"), f"{tmp_path / 'l.csv'}:4"
    elif case in ("sweep", "figure"):  # --run's options, not silently ignored
        extra, named = ["--sweep"] if case == "sweep" else ["--figure", str(tmp_path / "f.png")], f"--{case}"
    else:
        extra, named = [f"--{case}", "0"], f"--{case}"
    rc, out, err = cli(["--trace", path, *extra, "--json"], capsys)
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("iterflow: error:")
    assert named in err


# ----------------------------------------------------------------------------- determinism
def test_same_seed_same_output_other_seed_other_draws(tmp_path, capsys):
    path = str(noisy(tmp_path))
    runs = [cli(["--trace", path, "--targets", "3", "--replays", "3", "--seed", s, "--json"], capsys)[1]
            for s in ("5", "5", "6")]
    assert runs[0] == runs[1]
    assert json.loads(runs[0])["static"] != json.loads(runs[2])["static"]


# ----------------------------------------------------------------------------- known answers
def test_tight_target_only_the_largest_size_meets_it(tmp_path):
    tr = EllisTrace.from_file(synthetic(tmp_path))
    model = ProfileModel(tr)
    tight = tr.median_runtime(16)  # 16 executors make it exactly; 8 (65 s) does not
    r = replay_policy(model, tight, np.full(tr.n_jobs, 0.5))
    assert set(r.scale_outs) == {16}
    assert r.runtime <= tight * (1 + 1e-9)


def test_loose_target_cheapest_size(tmp_path):
    tr = EllisTrace.from_file(synthetic(tmp_path))
    loose = tr.median_runtime(4)  # every size makes it; 4 executors spend the fewest executor-seconds
    r = replay_policy(ProfileModel(tr), loose, np.full(tr.n_jobs, 0.5))
    assert set(r.scale_outs) == {4}
    ev = evaluate(tr, 1, replays=1, settings=Settings())
    assert ev.cheapest == [8]  # the midpoint target (77.5 s): 4 misses (115 s), 8 is cheaper than 16


def test_policy_scales_out_when_the_run_falls_behind(tmp_path):
    """A slow setup job (drawn from its second sample) leaves too little time at the planned
    size: the policy must move to a larger size and still make the target."""
    prof = [(s, [job_seconds(s, j) for j in range(6)]) for s in (4, 8, 16)]
    prof += [(s, [40.0] + [job_seconds(s, j) for j in range(1, 6)]) for s in (4, 8, 16)]
    tr = EllisTrace.from_file(write_trace(tmp_path / "late.csv", prof))
    model = ProfileModel(tr, quantile=0.3)  # plans for a fast setup job
    target = 75.0  # 8 executors: 65 s with a fast setup, 95 s with the slow one; 16: 70 s
    u = np.full(tr.n_jobs, 0.1)
    u[0] = 0.9  # the slow setup job
    r = replay_policy(model, target, u, Settings(quantile=0.3, rescale_seconds=0.0))
    assert r.scale_outs[0] == 8 and max(r.scale_outs) == 16
    assert r.runtime <= target
    assert replay_static(tr, 8, u).runtime > target
    # a rescale's cost is charged on the first job after it, as the driver records it
    paid = replay_policy(ProfileModel(tr, quantile=0.3), target, u, Settings(quantile=0.3, rescale_seconds=2.0))
    changes = [k for k in range(1, tr.n_jobs) if paid.scale_outs[k] != paid.scale_outs[k - 1]]
    assert changes
    for k in changes:
        assert paid.seconds[k] == pytest.approx(tr.draw(k, paid.scale_outs[k], u[k]) + 2.0)


def test_rescale_cost_learned_from_recorded_runs(tmp_path):
    # recorded run: 8 executors, then 4 from job 3 on; job 3 takes 5 s more than its profile
    rec = [(8, job_seconds(8, j)) for j in range(3)] + [(4, job_seconds(4, 3) + 5.0)]
    rec += [(4, job_seconds(4, j)) for j in range(4, 6)]
    tr = EllisTrace.from_file(synthetic(tmp_path, recorded=[rec]), profiling_runs=3)
    assert tr.rescale_seconds == pytest.approx(5.0, abs=0.01)
    assert tr.recorded[0].executor_seconds == pytest.approx(sum(s * t for s, t in rec), rel=1e-6)


# ----------------------------------------------------------------------------- the real traces
@pytest.mark.parametrize("name", ["ellis-kmeans.csv", "ellis-logisticregression.csv"])
def test_real_trace_contract_and_goal(name, capsys):
    path = ELLIS / name
    if not path.exists():
        pytest.skip(f"{path} not present")
    rc, out, _ = cli(["--trace", str(path), "--targets", "10", "--replays", "3", "--json"], capsys)
    doc = json.loads(out)
    assert rc == 0 and {"policy", "static", "recorded"} <= set(doc)
    assert doc["policy"]["violation_rate"] <= 0.10
    assert doc["policy"]["executor_seconds"] <= 1.15 * doc["cheapest_static"]["executor_seconds"]


def test_profile_model_predicts_the_rest_of_the_run_and_forbids_unprofiled_sizes(tmp_path):
    tr = EllisTrace.from_file(synthetic(tmp_path))
    model = ProfileModel(tr).at(2)
    rows = np.array([[4, 1.0], [5, 1.0], [8, 1.0], [16, 1.0], [40, 1.0]])
    p = model.predict(rows)
    left = tr.n_jobs - 2
    assert p[0] * left == pytest.approx(sum(job_seconds(4, j) for j in range(2, tr.n_jobs)))
    assert p[2] * left == pytest.approx(sum(job_seconds(8, j) for j in range(2, tr.n_jobs)))
    assert np.isinf(p[1]) and np.isinf(p[4])
    assert [model.predict_seconds(c) for c in rows[:, 0]] == pytest.approx(list(p))


def test_a_zero_duration_job_is_a_zero_second_sample(tmp_path):
    """The loader drops jobs of duration 0; inside a profiling run they count as 0 s, so their
    size stays a candidate."""
    prof = [(s, [job_seconds(s, j) for j in range(6)]) for s in (4, 8, 16)]
    prof[1][1][2] = 0.0  # 8 executors: job 2 took no time
    tr = EllisTrace.from_file(write_trace(tmp_path / "z.csv", prof))
    assert tr.scale_outs == [4, 8, 16]
    assert tr.median_runtime(8) == pytest.approx(sum(job_seconds(8, j) for j in range(6)) - job_seconds(8, 2))
