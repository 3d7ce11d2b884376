"""The cluster's task slow-down with scale-out, learned from earlier runs of other jobs and
applied to replay (pure logic, no Spark)."""
from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from iterflow.loop.records import Ran, Stats, SuperstepRecord
from iterflow.model.contention import Contention, fit, learn
from iterflow.model.replay import ReplayModel


def stages(*durations_s):
    return json.dumps([[i, 0, 0, [d * 1000 for d in ds]] for i, ds in enumerate(durations_s)])


def run_at(slots: int, beta: float, task: float = 0.5, tasks: int = 8, supersteps: int = 5,
           work: float = 100.0, overhead: float = 0.0) -> list[SuperstepRecord]:
    """A static run whose every task takes ``task * slots ** beta + overhead * (slots - 1)``
    seconds (a cluster whose tasks slow down as it scales out), superstep numbers from 1."""
    out = []
    for i in range(1, supersteps + 1):
        d = task * slots ** beta + overhead * (slots - 1)
        wall = 0.2 + d * -(-tasks // slots)
        out.append(SuperstepRecord(Ran(i, wall, slots, slots, tasks, work=work),
                                   stats=Stats(stage_tasks=stages([d] * tasks))))
    return out


def test_learns_the_exponent_of_a_job_seen_at_several_sizes():
    job = run_at(1, 0.6) + run_at(2, 0.6) + run_at(4, 0.6)  # one job's runs, numbers restart per run
    c = learn([job])
    assert c.beta == pytest.approx(0.6, abs=0.01)
    assert c.overhead == pytest.approx(0.0, abs=1e-3)
    assert (c.pairs, c.jobs) == (2, 1)
    assert c.factor(1, 4) == pytest.approx(4 ** 0.6, rel=0.02)
    assert c.factor(4, 1) == pytest.approx(4 ** -0.6, rel=0.02)  # replaying down a size speeds tasks up


def test_nothing_learned_from_jobs_seen_at_one_size_only():
    c = learn([run_at(2, 0.6), run_at(4, 0.6)])  # two jobs, one size each: no pair
    assert (c.beta, c.pairs) == (0.0, 0)
    assert c.factor(1, 8) == 1.0
    assert "none learned" in c.how


def test_a_proportional_and_a_per_task_slow_down_are_told_apart_by_jobs_of_different_task_lengths():
    """A shared CPU stretches tasks in proportion; remote reads add a fixed cost per task. Long
    tasks show the first, short ones the second: from both the fit recovers both."""
    jobs = [run_at(1, 0.3, task=t, overhead=0.01) + run_at(2, 0.3, task=t, overhead=0.01)
            + run_at(4, 0.3, task=t, overhead=0.01) for t in (2.0, 0.02)]
    c = learn(jobs)
    assert c.beta == pytest.approx(0.3, abs=0.02)
    assert c.overhead == pytest.approx(0.01, rel=0.15)
    assert c.task(0.02, 1, 4) == pytest.approx(0.02 * 4 ** 0.3 + 0.03, rel=0.1)
    assert c.task([2.0, 0.02], 4, 4) == [2.0, 0.02]  # at the measured size, as measured


def test_the_exponent_is_kept_within_bounds():
    assert learn([run_at(1, 3.0) + run_at(2, 3.0)]).beta == 1.5


def test_the_first_superstep_and_cold_ones_are_not_learned_from():
    warm = run_at(1, 0.0, supersteps=2) + run_at(4, 0.0, supersteps=2)  # superstep 1 is half of each run
    slow_first = [r.with_(stats=Stats(stage_tasks=stages([50.0] * 8))) if r.superstep == 1 and r.executors == 4
                  else r for r in warm]
    assert learn([slow_first]).beta == pytest.approx(0.0, abs=1e-6)


def test_replay_with_contention_stretches_the_tasks_at_more_slots():
    wall = 0.5 + 8 * 1.0  # 8 one-second tasks on 1 slot, 0.5 s outside tasks
    plain = ReplayModel().observe(1, 1.0, wall, stages([1.0] * 8))
    slowed = ReplayModel(contention=Contention(0.5)).observe(1, 1.0, wall, stages([1.0] * 8))
    assert plain.predict_seconds(4) == pytest.approx(0.5 + 2.0)
    assert slowed.predict_seconds(4) == pytest.approx(0.5 + 2.0 * 4 ** 0.5)
    assert slowed.predict_seconds(1) == pytest.approx(wall)  # the measured size is as measured


def test_a_job_predicted_from_one_size_with_the_exponent_of_other_jobs():
    """The issue-13 claim in small: beta learned from two other jobs at 1, 2 and 4 slots, a
    third job seen at 1 slot only is predicted at 4 within a few percent; plain replay is far off."""
    others = [run_at(1, 0.6, task=t) + run_at(2, 0.6, task=t) + run_at(4, 0.6, task=t) for t in (0.3, 0.8)]
    third_at_1, third_at_4 = run_at(1, 0.6, task=0.5), run_at(4, 0.6, task=0.5)
    model = ReplayModel(contention=learn(others))
    plain = ReplayModel()
    for r in third_at_1[1:]:
        model.observe(1, r.ran.work, r.wall_seconds, r.stats.stage_tasks)
        plain.observe(1, r.ran.work, r.wall_seconds, r.stats.stage_tasks)
    measured = third_at_4[-1].wall_seconds
    assert model.predict_seconds(4, 100.0) == pytest.approx(measured, rel=0.03)
    assert plain.predict_seconds(4, 100.0) < 0.6 * measured


def run_shaped(slow: dict[int, float], task: float = 0.5, supersteps: int = 5) -> list[SuperstepRecord]:
    """Static runs at each size of ``slow`` (slots -> task slow-down over one slot), one job."""
    out = []
    for m, f in slow.items():
        out += [SuperstepRecord(Ran(i, 0.2 + task * f * -(-8 // m), m, m, 8, work=100.0),
                                stats=Stats(stage_tasks=stages([task * f] * 8))) for i in range(1, supersteps + 1)]
    return out


def test_a_slow_down_that_is_no_power_law_is_kept_per_size():
    """The emulated cluster's shape (stop 28's static runs): tasks 8 % slower at 2 slots, 18 % at
    3, 50 % at 4 (the box full). One power law cannot hold both the flat start and the jump; the
    per-size terms learned from one job predict another job's tasks at every size, down as up."""
    shape = {1: 1.0, 2: 1.08, 3: 1.18, 4: 1.5}
    c = learn([run_shaped(shape, task=0.07)])
    for m, f in shape.items():
        assert c.task(0.05, 1, m) == pytest.approx(0.05 * f, rel=1e-6)
        assert c.task(0.05 * shape[4], 4, m) == pytest.approx(0.05 * f, rel=1e-6)  # a release from 4
    assert shape[2] < c.task(1.0, 1, 2.5) < shape[3]  # between sizes: interpolated
    assert c.task(1.0, 1, 8) >= shape[4]  # beyond them: the power law, never faster
    power = Contention(c.beta, c.overhead)  # the power law alone, fitted to the same runs:
    assert power.task(0.05 * shape[3], 3, 1) < 0.85 * 0.05  # a release 3 -> 1 read 15 % too fast


def test_per_size_terms_tell_a_fixed_cost_from_a_stretch_with_tasks_of_two_lengths():
    """At each size, a(m)·d + b(m): long tasks show the stretch, short ones the fixed cost."""
    def job(t):
        return [SuperstepRecord(Ran(i, 1.0, m, m, 8, work=100.0),
                                stats=Stats(stage_tasks=stages([t * {1: 1.0, 2: 1.1, 4: 1.6}[m] + 0.01 * (m - 1)] * 8)))
                for m in (1, 2, 4) for i in range(1, 6)]
    c = learn([job(2.0), job(0.02)])
    assert c.terms(4) == pytest.approx((1.6, 0.03), rel=0.02)
    assert c.task(0.5, 1, 2) == pytest.approx(0.5 * 1.1 + 0.01, rel=0.02)


def test_a_size_measured_slower_than_a_larger_one_is_pooled_with_it():
    c = learn([run_shaped({1: 1.0, 2: 1.07, 3: 1.38, 4: 1.25})])
    assert c.terms(3)[0] == pytest.approx(c.terms(4)[0]) == pytest.approx((1.38 + 1.25) / 2, rel=1e-6)
    assert c.task(1.0, 4, 3) == pytest.approx(1.0)  # a release 4 -> 3 is no speed-up


def test_the_fastest_size_is_the_fewest_slots_with_the_most_task_throughput():
    """Throughput ``m / task(m)``: the emulated cluster's calibration (a task 1.00 / 1.02 / 1.11 /
    1.62x as long at 1-4 slots) runs 1 / 1.96 / 2.70 / 2.47 tasks a task-second: 3 slots."""
    measured = Contention(sizes=((1.0, 1.0, 0.0), (2.0, 1.02, 0.0), (3.0, 1.11, 0.0), (4.0, 1.62, 0.0)))
    assert measured.fastest([1, 2, 3, 4])[0] == 2
    assert measured.fastest([1, 2])[0] == 1  # within the sizes asked about
    assert Contention().fastest([1, 2, 3, 4])[0] == 3  # no slow-down known: the largest
    assert Contention(0.5).fastest([1, 2, 4])[0] == 2  # sub-linear slow-down: more slots still faster
    assert Contention(1.2).fastest([1, 2, 4])[0] == 0  # tasks slow faster than slots are added
    flat = Contention(sizes=((1.0, 1.0, 0.0), (2.0, 2.0, 0.0), (3.0, 3.0, 0.0)))
    assert flat.fastest([1, 2, 3])[0] == 0  # a tie: the fewest


def test_the_fastest_size_is_where_a_job_was_measured_fastest_where_one_was():
    """The calibration job's supersteps at each size (``walls``) beat the task throughput: the
    fewest measured slots within 5 % of the fastest measured; the throughput rule where the
    largest size asked about was not measured."""
    tasks = ((1.0, 1.0, 0.0), (2.0, 1.02, 0.0), (3.0, 1.3, 0.0), (4.0, 1.5, 0.0))  # throughput: 4 (2.67 > 2.31)
    assert Contention(sizes=tasks).fastest([1, 2, 3, 4])[0] == 3
    timed = Contention(sizes=tasks, walls=((1.0, 2.4), (2.0, 1.4), (3.0, 1.04), (4.0, 1.0)))
    k, why = timed.fastest([1, 2, 3, 4])
    assert k == 2 and "1.04s at 3 slots and 1.00s at 4" in why
    assert timed.fastest([1, 2])[0] == 1  # both measured: 2
    assert timed.fastest([1, 2, 3, 4, 5])[0] == 4  # 5 never measured: the task throughput (the largest)
    slower = Contention(sizes=tasks, walls=((1.0, 2.4), (2.0, 1.4), (3.0, 1.06), (4.0, 1.0)))
    assert slower.fastest([1, 2, 3, 4])[0] == 3  # 6 % slower at 3: 4
    alone = Contention(walls=((2.0, 1.0), (4.0, 1.02)))  # no task slow-down learned, the supersteps measured
    assert alone.none and alone.fastest([1, 2, 3, 4])[0] == 1
    assert fit([{1.0: [0.1], 2.0: [0.11]}], walls={2.0: [1.0, 3.0, 1.2], 1.0: []}).walls == ((2.0, 1.2),)


def test_a_warm_start_keeps_what_the_calibration_said_of_each_sizes_speed():
    """A model given only the calibration job's supersteps (no task slow-down) that learns the
    slow-down from earlier runs still knows where the job ran fastest."""
    walls = ((1.0, 2.0), (3.0, 1.0), (4.0, 1.02))
    model = ReplayModel(contention=Contention(walls=walls))
    model.observe_many([(1.0, 1.0, 2.0, "[]"), (4.0, 1.0, 1.0, "[]")])
    assert model.contention.walls == walls



def test_one_job_with_short_and_long_tasks_tells_a_fixed_cost_from_a_stretch():
    """The calibration job alone (one program): its stages run 5-110 ms tasks. Every task at m
    slots takes a(m)·d + b(m); paired quantile by quantile, its tasks give both terms, where a
    mean per superstep gave one stretch that read a 10 ms task's slow-down far short."""
    truth = {1: (1.0, 0.0), 2: (1.08, 0.003), 3: (1.16, 0.009), 4: (1.26, 0.016)}
    base = [0.005, 0.006, 0.008, 0.012, 0.03, 0.09, 0.1, 0.11]  # one superstep's tasks at 1 slot

    def job():
        out = []
        for m, (a, b) in truth.items():
            tasks = [a * d + b for d in base]
            out += [SuperstepRecord(Ran(i, 0.3 + sum(tasks) / m, m, m, len(tasks), work=100.0),
                                    stats=Stats(stage_tasks=stages(tasks))) for i in range(1, 6)]
        return out
    c = learn([job()])
    for m, (a, b) in truth.items():
        assert c.terms(m) == pytest.approx((a, b), rel=0.02, abs=1e-4)
    short = 0.012 * truth[3][0] + truth[3][1]  # a 12 ms task at 1 slot, measured at 3
    assert c.task(short, 3, 2) == pytest.approx(0.012 * truth[2][0] + truth[2][1], rel=0.02)
    means = fit([{m: [float(np.mean([a * d + b for d in base]))] * 4 for m, (a, b) in truth.items()}])
    assert means.task(short, 3, 2) > 1.1 * c.task(short, 3, 2)  # the stretch alone: a release 3 -> 2 under-read


def test_tasks_of_0_ms_are_paired_and_a_size_of_few_tasks_pairs_its_median():
    """Durations are whole ms: at the faster size more short tasks read 0. They stay in the
    quantiles (dropped, they shift one side's levels: the short tasks' slow-down reads low); a
    size with few tasks gives its median only, never nine interpolated points."""
    from iterflow.model.contention import quantile_pairs

    base = [0.0] * 30 + [0.004] * 30 + [0.05] * 40  # 1 slot: 30 tasks of 0 ms (ms rounding)
    at2 = [1.05 * d + 0.002 for d in base]  # every task 1.05·d + 2 ms
    pairs = quantile_pairs({1.0: base, 2.0: at2})
    assert pairs and all(q0 > 0 and q > 0 for _, q0, _, q in pairs)  # a 0 pairs nothing, and shifts nothing
    assert len(pairs) == 7  # the levels 0.1-0.3 read 0 ms at 1 slot
    assert all(q == pytest.approx(1.05 * q0 + 0.002) for _, q0, _, q in pairs)  # the levels line up
    few = quantile_pairs({1.0: base, 2.0: [0.006, 0.008, 0.06]})
    assert [(m, round(q, 3)) for _, _, m, q in few] == [(2.0, 0.008)]  # the medians alone


def test_a_profile_written_before_reads_every_task_off_its_records():
    """Profiles written before stop 37 kept a mean per superstep; their records hold every task."""
    from iterflow.cluster.profile import ClusterProfile
    from iterflow.loop.records import table

    rows = run_shaped({1: 1.0, 2: 1.1}, task=0.05)  # 5 supersteps at 1 then 5 at 2, 8 tasks each
    rows = [r.with_(ran=Ran(r.superstep + (5 if r.executors == 2 else 0), r.wall_seconds, r.executors,
                            r.ran.cores, 8, work=100.0)) for r in rows]  # one run: numbers go on
    old = ClusterProfile("c", {1.0: [0.05] * 3, 2.0: [0.055] * 3}, notes={"warmup_supersteps": 1,
                         "measured_supersteps": list(range(1, 11))},
                         supersteps=table(rows).to_dict("records"))
    tasks = old.tasks()
    assert sorted(tasks) == [1.0, 2.0] and len(tasks[1.0]) == len(tasks[2.0]) == 4 * 8  # past each size's warm-up
    assert tasks[2.0][0] == pytest.approx(0.055)
    bare = ClusterProfile("c", {1.0: [0.05], 2.0: [0.055]})  # no records kept: what it stored
    assert bare.tasks() == bare.task_seconds


def shaped_job(m: int, works: list[float], slow: dict[int, float], outside: float = 0.15,
               each: float = 0.01) -> "object":
    """A superstep at ``m`` slots whose partition count follows the slots: each stage's work
    split into ``m`` tasks, each stretched by ``slow[m]`` plus a fixed ``each``; beyond 1
    partition Spark plans one stage more (a 1-task one), as it does PageRank's."""
    from iterflow.model.profiles import Profile
    from iterflow.model.tasks import makespan

    stages = [tuple(w / m * slow[m] + each for _ in range(m)) for w in works]
    if m > 1:
        stages.insert(2, (0.012,))
    wall = outside + sum(makespan(s, m) for s in stages)
    return Profile(float(m), 1.0, wall, tuple(stages))


def test_per_size_terms_matched_to_the_calibration_jobs_supersteps():
    """Quantiles paired across a change of stage plan misread the slow-down (stop 44-47: 0.75x a
    task at 2 slots, 2.5x at 4); matched to the calibration job's measured supersteps from the
    smallest size planned as the largest (2 here: 1 partition plans a stage fewer), replay
    reproduces them, and predicts another job's size from one within a few %."""
    from iterflow.model.contention_match import match_walls

    truth = {1: 1.0, 2: 1.3, 3: 1.6, 4: 2.4}
    cal = [shaped_job(m, [0.02, 0.03, 0.6, 0.35], truth) for m in (1, 2, 3, 4) for _ in range(3)]
    walls = {float(m): next(p.seconds for p in cal if p.slots == m) for m in (1, 2, 3, 4)}
    misread = Contention(0.5, 0.0, 3, 1, "quantiles", ((1.0, 1.0, 0.0), (2.0, 0.75, 0.0), (3.0, 1.2, 0.0),
                                                        (4.0, 2.5, 0.0)))
    matched = match_walls(misread, cal, walls)
    assert "from 2 slots" in matched.how
    base = [p for p in cal if p.slots == 2.0]
    for m in (2.0, 3.0, 4.0):
        replayed = float(np.median([p.replay(m, contention=matched, follow=0.01) for p in base]))
        assert replayed == pytest.approx(walls[m], rel=0.02)
    a = [t[1] for t in matched.sizes]
    assert a == sorted(a) and a[2] / a[1] == pytest.approx(truth[3] / truth[2], rel=0.05)
    # 1 slot, planned with a stage fewer: matched to its wall too, a task there faster than at 2
    assert float(np.median([p.replay(1.0, contention=matched, follow=0.01) for p in base])) == \
        pytest.approx(walls[1.0], rel=0.02)
    assert a[0] < a[1]
    # another job (its own stage works), measured at 3 executors, predicted at 2; measured at 1
    # executor, predicted at 2 -- where 1 slot kept its quantile term capped at the base's, read
    # 2 executors as fast as halving the one task (stop 63: 16-20 % too fast)
    other3, other2, other1 = (shaped_job(m, [0.05, 0.01, 1.2, 0.9], truth, outside=0.3) for m in (3, 2, 1))
    capped = replace(misread, sizes=((1.0, 0.75, 0.0), *misread.sizes[1:]))
    for c, close in ((matched, True), (misread, False)):
        predicted = other3.replay(2.0, contention=c, follow=0.01)
        assert (abs(predicted / other2.seconds - 1) < 0.08) is close
    for c, close in ((matched, True), (capped, False)):
        predicted = other1.replay(2.0, contention=c, follow=0.01)
        assert (abs(predicted / other2.seconds - 1) < 0.08) is close
    assert match_walls(misread, cal, {1.0: walls[1.0]}) is misread  # one size measured: nothing to match
