"""Task replay: predicting a superstep at other scale-outs from one measured at a single size
(pure logic, no Spark)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from iterflow.model.contention import Contention
from iterflow.model.profiles import Profile
from iterflow.model.replay import SHRINK_BELOW, ReplayModel, correction
from iterflow.model.tasks import makespan, resplit


def stages(*durations_s):
    return json.dumps([[i, 0, 0, [int(d * 1000) for d in ds]] for i, ds in enumerate(durations_s)])


def test_makespan_is_the_list_schedule_in_task_order():
    assert makespan([1, 1, 1, 1], 4) == 1
    assert makespan([1, 1, 1, 1], 1) == 4
    assert makespan([3, 1, 1, 1], 2) == 3  # the long task first: the others fill the other slot
    assert makespan([1, 1, 1, 3], 2) == 4  # the long task last (Spark's index order)
    assert makespan([], 3) == 0


def test_one_size_predicts_the_others_fixed_time_kept_parallel_time_divided():
    wall = 8 * 1.0 + 2 * 0.5 + 0.5  # 8 one-second tasks, then 2 of 0.5 s, 0.5 s outside tasks
    m = ReplayModel().observe(1, 100.0, wall, stages([1.0] * 8, [0.5, 0.5]))
    assert m.predict_seconds(1, 100.0) == pytest.approx(wall)
    assert m.predict_seconds(4, 100.0) == pytest.approx(0.5 + 2.0 + 0.5)
    assert m.predict_seconds(8, 100.0) == pytest.approx(0.5 + 1.0 + 0.5)
    assert m.predict_seconds(4, 50.0) == pytest.approx(0.5 + (2.0 + 0.5) / 2)  # half the work
    lo, hi = m.predict_interval(4, 100.0)
    assert lo < m.predict_seconds(4, 100.0) < hi


def test_a_stage_re_cut_keeps_its_work_and_pays_each_task_its_overhead():
    assert resplit([1.0, 1.0, 1.0, 1.0], 2, 0.0) == pytest.approx([2.0, 2.0])
    assert resplit([1.0, 1.0, 1.0, 1.0], 2, 0.1) == pytest.approx([1.9, 1.9])  # 4 x 0.9 of work, 2 overheads
    assert resplit([2.1], 4, 0.1) == pytest.approx([0.6] * 4)
    # a hot task stays hot: split, its halves carry its work; merged, its neighbour's is added
    assert resplit([3.0, 1.0], 4, 0.0) == pytest.approx([1.5, 1.5, 0.5, 0.5])
    assert resplit([3.0, 1.0, 1.0, 1.0], 2, 0.0) == pytest.approx([4.0, 2.0])
    assert resplit([0.5, 0.7], 2, 0.1) == [0.5, 0.7] and resplit([], 3, 0.1) == []


def test_a_re_cut_in_plain_python_gives_numpys_floats():
    """The re-cut runs in plain Python (a barrier re-cuts every replayed stage at each size) and
    must give the floats of its numpy form (cumulative work read by np.interp at np.linspace's
    edges) bit for bit: the model's predictions and the simulator's replays do not move."""
    rng = np.random.default_rng(7)
    for _ in range(3000):
        m, n = (int(x) for x in rng.integers(1, 30, 2))
        d = rng.exponential(0.1, m) * (rng.random(m) < 0.9)
        o = float(rng.uniform(0, 0.05))
        cum = np.concatenate([[0.0], np.cumsum(np.maximum(d - o, 0.0))])
        ref = list(np.diff(np.interp(np.linspace(0, m, n + 1), np.arange(m + 1), cum)) + o) if n != m else list(d)
        assert resplit(list(d), n, o) == ref


def test_where_the_partitions_follow_the_cores_more_slots_get_more_tasks():
    # measured on 1 slot at one task a core: a 2.1 s stage and a tail-like 0.1 s one (all overhead)
    wall = 2.1 + 0.1 + 0.3
    fixed = ReplayModel().observe(1, 100.0, wall, stages([2.1], [0.1]))
    follow = ReplayModel(tasks_follow_slots=True).observe(1, 100.0, wall, stages([2.1], [0.1]))
    assert fixed.predict_seconds(4, 100.0) == pytest.approx(wall)  # one task: no slot to spare it
    assert follow.task_overhead == pytest.approx(0.1)
    # at 4 slots 4 tasks a stage: 2.0 s of work in four, each paying 0.1 s; the tail stays 0.1 s
    assert follow.predict_seconds(4, 100.0) == pytest.approx(0.3 + (0.5 + 0.1) + 0.1)
    assert follow.predict_seconds(1, 100.0) == pytest.approx(wall)


def test_measurements_at_other_sizes_correct_the_replay():
    m = ReplayModel()
    for _ in range(SHRINK_BELOW):  # each size measured enough to stand on its own (see below)
        m.observe(1, 1.0, 8.5, stages([1.0] * 8))
    replay4 = m.predict_seconds(4, 1.0)
    for _ in range(SHRINK_BELOW):
        m.observe(4, 1.0, replay4 * 1.3)  # slower than replayed at 4 (remote reads, a busier driver)
    assert m.predict_seconds(4, 1.0) == pytest.approx(replay4 * 1.3)
    assert m.predict_seconds(1, 1.0) == pytest.approx(8.5)
    between = m.predict_seconds(2, 1.0) / m._replayed(2, 1.0)
    assert 1.0 < between < 1.3  # interpolated in log scale-out
    assert m.predict_seconds(8, 1.0) / m._replayed(8, 1.0) == pytest.approx(1.3)  # flat beyond


def test_correction_and_profiles_without_tasks():
    assert correction({}, 3) == 1.0
    assert correction({1.0: 1.0, 4.0: 2.0}, 2.0) == pytest.approx(1.5)
    assert Profile.parse(1, 1, 1.0, "[]") is None
    m = ReplayModel().observe(2, 1.0, 3.0)  # no task rows (statistics from the status store)
    assert not m.fitted
    with pytest.raises(ValueError):
        m.predict_seconds(2)


def test_a_large_stage_is_recorded_as_a_sketch_that_replays_like_its_tasks():
    """Past SKETCH_ABOVE tasks a stage keeps quantiles and its count: the record stays small
    and a replay of the sketch schedules like the tasks themselves."""
    import numpy as np

    from iterflow.observe.stats import SKETCH_ABOVE, SKETCH_POINTS, stage_tasks, task_durations

    rng = np.random.default_rng(3)
    big = [[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, float(ms)] for ms in rng.gamma(2.0, 50.0, 4 * SKETCH_ABOVE).astype(int)]
    small = [[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7.0], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9.0]]
    for rows in (big, small):
        for r in rows:
            r[3] = r[10]
    doc = json.loads(stage_tasks([{"stageId": 1, "submitted": 10, "completed": 90, "task_rows": big},
                                  {"stageId": 2, "submitted": 90, "completed": 99, "task_rows": small}]))
    assert len(doc[0]) == 5 and len(doc[0][3]) == SKETCH_POINTS and doc[0][4] == len(big)
    assert doc[1] == [2, 80, 89, [7, 9]] and task_durations(doc[1]) == [7.0, 9.0]
    exact = [float(r[3]) for r in big]
    back = task_durations(doc[0])
    assert len(back) == len(exact) and abs(sum(back) - sum(exact)) / sum(exact) < 0.02
    for slots in (4, 16, 64):
        assert makespan(sorted(back), slots) == pytest.approx(makespan(sorted(exact), slots), rel=0.05)
    prof = Profile.parse(4, 1.0, 10.0, json.dumps(doc))
    assert prof is not None and len(prof.stages[0]) == len(big)


def test_a_prediction_replays_the_supersteps_nearest_in_work():
    """A converging job's earlier runs end in tail supersteps that are all overhead: scaled up by
    work they would predict a full superstep thousands of times too long (seen warm-starting
    WCC). The profiles nearest in work are replayed instead."""
    m = ReplayModel(keep=2)
    for _ in range(3):
        m.observe(1, 1000.0, 4.5, stages([1.0] * 4))   # full supersteps: 4 s of tasks
    for _ in range(3):
        m.observe(1, 1.0, 0.6, stages([0.1] * 4))       # tail supersteps: 0.4 s of tasks, 1/1000 the work
    assert m.predict_seconds(1, 1000.0) == pytest.approx(4.5, rel=0.01)
    assert m.predict_seconds(1, 1.0) == pytest.approx(0.6, rel=0.01)
    assert m.predict_seconds(4, 1000.0) == pytest.approx(0.5 + 1.0, rel=0.01)


def test_task_time_follows_work_as_the_run_measured_it_not_in_proportion():
    """WCC: every superstep joins the whole edge list, so its task time is ~1 s plus a little per
    changed label. A forecast tail of 2 labels is a second of tasks, not 2/20 of the last one's."""
    from iterflow.model.profiles import WorkCost

    m = ReplayModel()
    for work in (100_000.0, 20_000.0, 1_000.0, 60.0, 25.0, 20.0):
        task = 1.0 + 2e-5 * work
        m.observe(1, work, task + 0.2, stages([task / 4] * 4))
    assert m.cost is not None and m.cost.a == pytest.approx(1.0, rel=0.05)
    assert m.predict_seconds(1, 2.0) == pytest.approx(1.2, rel=0.05)  # in proportion: 0.3 s
    assert m.predict_seconds(1, 50_000.0) == pytest.approx(2.2, rel=0.05)
    flat = ReplayModel()
    for _ in range(4):
        flat.observe(1, 100.0, 1.2, stages([0.25] * 4))
    assert flat.cost is None and flat.predict_seconds(1, 50.0) == pytest.approx(0.2 + 0.5)  # one work: in proportion
    assert WorkCost(0.0, 1.0).ratio(5.0, 10.0) == 0.5


def test_earlier_runs_give_the_shape_across_sizes_and_this_run_the_level():
    """Earlier runs measured 1 and 4 slots equally fast (replay promised 4x); this run, at 4
    slots, is 30 % faster than they were at 4 (a warmer session). Predicted at 1 slot: as fast
    as this run at 4 -- not the earlier runs' slower time, which would make 4 look 30 % better."""
    tasks = stages([1.0] * 4)
    m = ReplayModel()
    m.observe_many([(1, 1.0, 4.0, tasks), (1, 1.0, 4.0, tasks), (4, 1.0, 4.0, None), (4, 1.0, 4.0, None)])
    assert m.predict_seconds(4) == pytest.approx(m.predict_seconds(1))
    for _ in range(3):
        m.observe(4, 1.0, 2.8)
    assert m.predict_seconds(4) == pytest.approx(2.8)
    assert m.predict_seconds(1) == pytest.approx(2.8)


def test_one_superstep_at_a_new_size_moves_the_prediction_half_way():
    """A size measured once is one sample of a noisy machine: the prediction there moves half
    way (geometric) from what the other sizes say towards it, and all the way once measured
    :data:`SHRINK_BELOW` times (WCC after a release 2 -> 1 ran 1.85 s once where it ran ~1.2 s
    steady; read as the level, ``target`` scaled out for nothing)."""
    m = ReplayModel()
    for _ in range(5):
        m.observe(2, 1.0, 4.6, stages([1.0] * 8))  # 8 one-second tasks on 2 slots, 0.6 s outside
    before = m.predict_seconds(1, 1.0)
    assert before == pytest.approx(8.6)
    m.observe(1, 1.0, before * 1.5)  # one slow superstep at 1
    assert m.predict_seconds(1, 1.0) == pytest.approx(before * 1.5 ** 0.5)
    m.observe(1, 1.0, before * 1.5)
    assert m.predict_seconds(1, 1.0) == pytest.approx(before * 1.5 ** (2 / 3))
    for _ in range(SHRINK_BELOW - 2):
        m.observe(1, 1.0, before * 1.5)
    assert m.predict_seconds(1, 1.0) == pytest.approx(before * 1.5)  # measured enough: its own level
    assert m.predict_seconds(2, 1.0) == pytest.approx(4.6)  # the other size keeps its own


def test_a_size_earlier_runs_measured_is_shrunk_towards_their_ratio_there_and_in_no_order():
    """The pull is what the model says without this run's samples at the size: earlier runs'
    own ratio there (at this run's level), not the neighbours'; two sizes measured once each
    are each pulled by the other's unshrunk sample, whichever was measured first."""
    tasks = stages([1.0] * 8)
    m = ReplayModel()
    m.observe_many([(1, 1.0, 8.5, tasks)] * 3 + [(2, 1.0, 4.5, tasks)] * 3 + [(4, 1.0, 2.5 * 1.5, tasks)] * 3)
    at2 = m.predict_seconds(2, 1.0)
    m.observe(2, 1.0, at2)  # as the earlier runs measured it: nothing to move
    assert m.predict_seconds(2, 1.0) == pytest.approx(at2)

    def both(order):
        r = ReplayModel()
        for _ in range(SHRINK_BELOW):
            r.observe(1, 1.0, 8.5, tasks)
        for slots, ratio in order:
            r.observe(slots, 1.0, r._replayed(slots, 1.0) * ratio)
        return r.ratios()

    a, b = both([(2, 1.2), (4, 1.5)]), both([(4, 1.5), (2, 1.2)])
    assert a == pytest.approx(b)
    assert a[2] == pytest.approx((1.2 * correction({1.0: 1.0, 4.0: 1.5}, 2.0)) ** 0.5)  # 4's raw 1.5
    assert a[4] == pytest.approx((1.5 * 1.2) ** 0.5)  # beyond 2: held flat at 2's raw 1.2


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the relative median of a zero sample
def test_a_zero_sample_is_not_shrunk_into_an_error():
    m = ReplayModel()
    for _ in range(SHRINK_BELOW):
        m.observe(1, 1.0, 8.5, stages([1.0] * 8))
    m.observe_many([(4, 1.0, 0.0, None)])  # an earlier run's row without its wall time
    m.observe(4, 1.0, 0.0)
    assert m.ratios()[4.0] == 0.0


def test_earlier_runs_are_compared_where_this_run_is_in_work():
    """WCC: earlier runs' last supersteps (the deep tail, work ~1) ran every size about as the
    replay says, but where this run is (work 10) 1 slot ran 2x what the replay says. The level and
    shape come from the earlier supersteps nearest this run's work, not from their last ones (stop
    38w2: read from the last ones, 2 executors looked ~1.3x slower than 3 where they ran ~1.05x;
    ``efficiency`` kept 3 for the whole tail)."""
    tasks = stages([0.2, 0.2])  # this run's superstep at 2 slots: 0.2 s in tasks, 0.3 s outside
    m = ReplayModel()
    m.observe_many([(1, 10.0, 1.4, None)] * 5 + [(2, 10.0, 0.5, None)] * 5
                   + [(1, 1.0, 0.34, None)] * 5 + [(2, 1.0, 0.32, None)] * 5)
    for _ in range(3):
        m.observe(2, 10.0, 0.5, tasks)
    assert m.predict_seconds(2, 10.0) == pytest.approx(0.5)
    assert m.predict_seconds(1, 10.0) == pytest.approx(1.4, rel=0.05)  # what 1 slot ran there


def test_a_size_measured_before_is_replayed_from_its_own_supersteps():
    """Earlier runs measured WCC's heavy supersteps at 1 executor (3.5-3.8 s) and at 4; carried
    from 4 slots to 1 through the cluster's task slow-down, their tasks read the heavy phase at
    1.5-1.9 s at 1 executor (stop 39w2), and ``fastest`` planned 3 executors for the whole run
    as if they cost what 1 does. The profiles nearest in size as well as work are replayed, and
    each size keeps its own (``remember`` per size: the later runs at 4 do not push out 1's)."""
    m = ReplayModel(keep=3, remember=5)
    rows = [(1, 1000.0, 4.5, stages([1.0] * 4))] * 3 + [(1, 1.0, 0.6, stages([0.1] * 4))] * 2
    # at 4 slots the heavy tasks ran a quarter as long each (not what the task slow-down says)
    rows += [(4, 1000.0, 0.9, stages([0.25] * 4)), (4, 1.0, 0.35, stages([0.05] * 4))] * 3
    m.observe_many(rows)
    assert sum(p.slots == 1 for p in m.profiles) == 5 and sum(p.slots == 4 for p in m.profiles) == 5
    assert m.predict_seconds(1, 1000.0) == pytest.approx(4.5, rel=0.05)
    assert m.predict_seconds(4, 1000.0) == pytest.approx(0.9, rel=0.05)
    assert m.predict_seconds(1, 1.0) == pytest.approx(0.6, rel=0.05)


def test_a_size_with_supersteps_near_in_work_is_replayed_from_them_alone():
    """Stop 52w20b: WCC's heavy superstep measured at 1 executor (6.8 s) sat among its five
    nearest profiles with the same superstep at 2 executors, carried to 1 slot at 3.5-3.9 s; the
    relative median (weights 1/y) picked 3.9 s, the whole run at 1 read 27.5 s where static-1
    had just taken 43 s, and ``efficiency`` started at 1 executor (+46 % runtime). Where the size
    asked about has supersteps within 2x in work, only they are replayed there."""
    m = ReplayModel(keep=5)
    rows = [(1, 1000.0, 6.8, stages([1.5] * 4)), (1, 1.0, 0.6, stages([0.1] * 4))]
    rows += [(2, 1000.0, 2.0, stages([0.8] * 4)), (2, 1.0, 0.4, stages([0.05] * 4))] * 3
    m.observe_many(rows)
    assert m.predict_seconds(1, 1000.0) == pytest.approx(6.8, rel=0.05)
    assert m.predict_seconds(1, 700.0) == pytest.approx(6.8 * 700 / 1000, rel=0.3)  # the same superstep, scaled
    assert m.predict_seconds(2, 1000.0) == pytest.approx(2.0, rel=0.05)
    # a size with none near in work is still replayed from the nearest in work and size
    assert m.predict_seconds(4, 1000.0) < 2.0


def test_earlier_runs_of_flat_work_are_read_over_every_superstep_not_their_latest_few():
    """k-means (flat work): an earlier run at 2 slots ran 1.0 s a superstep but its last five
    read 0.6 s (a noisy machine); at 1 slot 1.5 s, its last five 2.0 s. Before this run measured
    anything (a planned start) and once it did, at a size it has not run: every superstep as
    near in work as the nearest counts, not the latest ``keep`` (stop 50: k-means' ``fastest``
    started at 2 for a budget static-2 overran by 1.5x)."""
    tasks = stages([0.2, 0.2])
    slow = [(1, 5.0, 1.5, tasks)] * 10 + [(1, 5.0, 2.0, tasks)] * 5
    fast = [(2, 5.0, 1.0, tasks)] * 10 + [(2, 5.0, 0.6, tasks)] * 5
    m = ReplayModel()
    m.observe_many(slow + fast)
    assert m.predict_seconds(1, 5.0) == pytest.approx(1.5, rel=0.05)
    assert m.predict_seconds(2, 5.0) == pytest.approx(1.0, rel=0.05)
    for _ in range(3):
        m.observe(4, 5.0, 0.8, tasks)  # this run, at 4 slots: the level; 1 and 2 keep their shape
    assert m.predict_seconds(1, 5.0) / m.predict_seconds(2, 5.0) == pytest.approx(1.5, rel=0.05)


def test_a_tasks_fixed_cost_is_fitted_where_work_spans_not_read_off_the_shortest_task():
    """WCC's tail at 3 slots: each stage 3 tasks of ~90 ms whatever the work (at 1 slot it ran one
    of 93 ms), plus a 6 ms stage. Re-cut with the shortest task as the fixed cost, the tail's 3
    tasks merged into one of ~0.26 s and 1 executor read ~2x slower than it ran (stop 53w20d)."""
    m = ReplayModel(tasks_follow_slots=True)
    for work in (300_000.0, 300_000.0, 300_000.0, 100_000.0, 4_000.0, 130.0, 30.0, 25.0, 25.0):
        task = 0.09 + 1e-5 * work  # a fixed cost a task, the rest follows the work
        m.observe(3, work, 3 * task + 0.006 + 0.2, stages([task] * 3, [task] * 3, [task] * 3, [0.006] * 3))
    # the tail at 1 slot: a task a stage, each its fixed cost (shortest task: 3 x 90 ms merged)
    assert m.predict_seconds(1, 25.0) == pytest.approx(0.2 + 3 * 0.09 + 0.006, rel=0.1)
    # a heavy superstep still divides its work: 3 tasks of 3.09 s merged into one of ~9.1 s
    assert m.predict_seconds(1, 300_000.0) == pytest.approx(0.2 + 3 * (3 * 3.0 + 0.09) + 0.006, rel=0.05)
    from iterflow.model.tasks import task_fixed_cost

    assert m.task_overhead == pytest.approx(0.09, rel=0.1)
    # flat work cannot tell a fixed cost from work: the shortest task, as before
    flat = [(((0.5, 0.5), (0.1, 0.12)), 100.0)] * 4
    assert task_fixed_cost(flat) == pytest.approx(0.1)


def test_at_one_size_the_clusters_measured_fixed_cost_caps_a_shortest_task_that_is_a_whole_stage():
    """WCC's heavy supersteps at one executor (stop75full): each stage one task, 2.8 s, 1.3 s and
    0.6 s, the work within 2x. The shortest task -- a whole 0.6 s stage -- read as every task's
    fixed cost made a re-cut to 4 tasks pay it four times over, and 4 executors read slower than
    1 (5.1 s against 1.55 s measured). The calibration's fixed cost at that size (30 ms) caps it:
    the stages divide. Not where the run measured another size: its task counts tell the two apart."""
    heavy = [(2.8, 1.3, 0.6), (2.6, 1.2, 0.62), (2.9, 1.25, 0.58)]
    works = (260_000.0, 350_000.0, 360_000.0)

    def fed(contention):
        m = ReplayModel(contention=contention, tasks_follow_slots=True)
        for w, st in zip(works, heavy):
            m.observe(1, w, sum(st) + 0.15, stages(*([t] for t in st)))
        return m

    blind, capped = fed(Contention()), fed(Contention(fixed=((1.0, 0.03), (4.0, 0.02))))
    assert blind.task_overhead == pytest.approx(0.58)
    assert capped.task_overhead == pytest.approx(0.03)
    one, four = capped.predict_seconds(1, 360_000.0), capped.predict_seconds(4, 360_000.0)
    assert one == pytest.approx(blind.predict_seconds(1, 360_000.0))  # the size it ran: as measured
    # each stage's work in four, each task paying 30 ms (no task slow-down in this test; the
    # emulated cluster's 1.67x at 4 slots turned blind's 1.8x gain into a loss)
    assert four == pytest.approx(0.15 + (one - 0.15 - 3 * 0.03) / 4 + 3 * 0.03, rel=0.05)
    assert blind.predict_seconds(4, 360_000.0) > 1.8 * four
    # a second size measured: the cap is not applied (the fit or the shortest task, as before)
    capped.observe(2, 360_000.0, 2.5, stages([1.4, 1.4], [0.6, 0.6], [0.3, 0.31]))
    assert capped.task_overhead == pytest.approx(0.3)


def test_the_clusters_fixed_cost_is_read_at_the_nearest_size_it_measured():
    c = Contention(fixed=((1.0, 0.027), (2.0, 0.011), (4.0, 0.02)))
    assert c.task_fixed(1) == 0.027 and c.task_fixed(3) == 0.02 and c.task_fixed(8) == 0.02
    assert c.task_fixed(1.3) == 0.027 and Contention().task_fixed(2) is None


def test_a_heavy_superstep_read_at_a_tails_work_keeps_a_tasks_fixed_cost_not_its_task_counts():
    """Only heavy supersteps measured (3 slots, 3 tasks a stage of 90 ms fixed + work): asked for
    a tail of 25 labels, each task keeps its fixed cost and loses its work, then the stages are
    re-cut -- one task a stage at 1 slot, as fast as three in parallel at 3. Scaled as a whole,
    the 1-slot replay kept three tasks' fixed cost a stage and read the tail ~1.6x slower on 1
    executor than on 3 (stop 54w20; static-1 ran it 0.8x static-3's time)."""
    m = ReplayModel(tasks_follow_slots=True)
    for work in (300_000.0, 200_000.0, 100_000.0, 50_000.0, 10_000.0):
        task = 0.09 + 1e-5 * work
        m.observe(3, work, 3 * task + 0.2, stages([task] * 3, [task] * 3, [task] * 3))
    one, three = m.predict_seconds(1, 25.0), m.predict_seconds(3, 25.0)
    assert one == pytest.approx(three, rel=0.05) and one == pytest.approx(0.2 + 3 * 0.09, rel=0.1)
    # the work still divides: a heavy superstep is ~3x the tasks' time at 1 slot
    assert m.predict_seconds(1, 300_000.0) == pytest.approx(0.2 + 3 * (3 * 3.0 + 0.09), rel=0.05)


def test_every_size_reads_the_same_profiles_so_a_size_slower_for_each_is_slower_for_all():
    """WCC's heavy supersteps at 3 executors (stop64all, the 32.8 s target's run), replayed on 1
    slot under a task slow-down like the emulated cluster's: each one slower at 1 than at 3, so
    the prediction must be too. Weighted by their replays at 1, the relative median took the
    cheapest-carried profile there (3.6 s) and another at 3 (4.3 s), and ``target`` scaled in
    3 -> 1 in the heavy phase as the earliest finish."""
    heavy = [(353865.0, 5.193, [[2300, 2323, 2359], [1393, 1410, 1424], [921, 933, 1178]]),
             (361006.0, 4.594, [[2113, 2186, 2229], [1154, 1314, 1323], [803, 821, 824]]),
             (338793.0, 2.953, [[937, 1025, 1341], [621, 642, 714], [433, 642, 716]])]
    slowed = Contention(sizes=((1.0, 1.0, 0.0), (2.0, 1.0, 0.0), (3.0, 1.3, 0.0)))
    m = ReplayModel(contention=slowed, tasks_follow_slots=True)
    for work, wall, tasks in heavy:
        m.observe(3, work, wall, json.dumps([[i, 0, 0, t] for i, t in enumerate(tasks)]))
    w = heavy[-1][0]
    each = [(p.replay(1, w, slowed, m.cost, m.task_overhead), p.replay(3, w, slowed, m.cost, m.task_overhead))
            for p in m.nearest(w, 1)]
    assert all(at1 > at3 for at1, at3 in each)
    assert m.predict_seconds(1, w) > m.predict_seconds(3, w)
    # at the size they were measured at, the relative median of their own replays, as before
    assert m.predict_seconds(3, w) == pytest.approx(sorted(at3 for _, at3 in each)[1])


def test_a_repeated_superstep_replays_its_own_profile_not_its_neighbours_in_work():
    """Six tail supersteps of 0.3 s tasks and one (work 24) that also checkpointed: 8 tasks of
    1 s, all of them at 8 slots. Asked at 2 slots for work 24 the nearest in work mix the
    checkpoint with its neighbours; ``like=24`` (the repeated run's superstep) replays its own
    tasks: 4 s of them at 2 slots, where it measured 1 s at 8."""
    m = ReplayModel()
    for w in (20.0, 21.0, 22.0, 23.0, 25.0, 26.0):
        m.observe(8, w, 0.3 + 0.1, stages([0.3] * 8))
    m.observe(8, 24.0, 1.0 + 0.1, stages([1.0] * 8))
    own = m.predict_seconds(2, 24.0, like=24.0)
    assert own == pytest.approx(0.1 + 4.0, rel=0.05)
    assert m.predict_seconds(2, 24.0) < 0.5 * own  # its neighbours' tail read for it
    assert m.predict_seconds(8, 24.0, like=24.0) == pytest.approx(1.1, rel=0.05)
    # no profile of that work kept: the nearest in work, as without it
    assert m.predict_seconds(2, 24.0, like=99.0) == pytest.approx(m.predict_seconds(2, 24.0))
