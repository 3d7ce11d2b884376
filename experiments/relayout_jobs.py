"""Where a release's relayout spends its seconds: Spark's event log of its job group ``relayout-<i>``.

    .venv/bin/python experiments/relayout_jobs.py [--rebuilt]

On the emulated cluster, scripted releases (PageRank R-MAT 18 1M 3 -> 1 and 4 -> 2 at barrier 4; WCC
R-MAT 20 3 -> 1 and 4 -> 2 at barrier 6), then every job of the relayout groups with its stages'
wall and summed task milliseconds. ``--rebuilt``: with the lazy release to one executor off
(``program.LAZY_NARROW``), as before stop 49. Stop 49's run before the change
(``experiments/results/relayout_jobs.txt``): PageRank's edges re-cached in 4.0 s of a 5.1 s relayout
3 -> 1 (one task at 0.5 core), the ranks' checkpoint 0.9 s; WCC's adjacency 1.6-1.7 s, its labels'
checkpoint 1.3-2.0 s -- re-building blocks, not moving them. No timing is compared here.
"""
import collections
import json
import time
from common import rmat
from harness import Collector, cluster, parse_args, warm_up
from one_partition import ReleaseAt
from algorithms import PageRank, WeaklyConnectedComponents
from iterflow.inputs.graphio import load_graph
from iterflow.loop import program as programs
from iterflow.observe.eventlog import event_lines, find_log


def groups(log):
    """Jobs (group, start, end, stages), stages (name, tasks, wall ms) and summed task ms per stage."""
    jobs, stages, tasks = {}, {}, collections.defaultdict(float)
    for line in event_lines(log):
        e = json.loads(line)
        ev = e['Event']
        if ev == 'SparkListenerJobStart':
            g = (e.get('Properties') or {}).get('spark.jobGroup.id')
            jobs[e['Job ID']] = dict(group=g, start=e['Submission Time'], stages=e['Stage IDs'],
                                     desc=(e.get('Properties') or {}).get('spark.job.description') or '',
                                     callsite=(e.get('Properties') or {}).get('callSite.short',''))
        elif ev == 'SparkListenerJobEnd':
            jobs[e['Job ID']]['end'] = e['Completion Time']
        elif ev == 'SparkListenerStageCompleted':
            si = e['Stage Info']
            if 'Submission Time' in si:
                stages[si['Stage ID']] = (si['Stage Name'][:60], si['Number of Tasks'], si['Completion Time'] - si['Submission Time'])
        elif ev == 'SparkListenerTaskEnd':
            tasks[e['Stage ID']] += e['Task Info']['Finish Time'] - e['Task Info']['Launch Time']
    return jobs, stages, tasks


def main() -> int:
    args = parse_args(__doc__, 'relayout_jobs', lambda ap: ap.add_argument('--rebuilt', action='store_true'),
                      quick_reps=1, partitions=None)
    programs.LAZY_NARROW = not args.rebuilt
    with cluster(args) as (_, spark, note):
        print(note, flush=True)
        pr = load_graph(spark, str(rmat(18, 1_000_000)), "edgelist")
        wcc = load_graph(spark, str(rmat(20, 2_400_000, tail=30)), "edgelist")
        warm_up(spark, PageRank(pr, max_iterations=3), args)
        warm_up(spark, WeaklyConnectedComponents(wcc, max_iterations=4), args)
        runs = Collector()
        for name, make, start, at, to in [("pr 3->1", lambda: PageRank(pr, max_iterations=10), 3, 4, 1),
                                          ("pr 4->2", lambda: PageRank(pr, max_iterations=10), 4, 4, 2),
                                          ("wcc 3->1", lambda: WeaklyConnectedComponents(wcc, max_iterations=10), 3, 6, 1),
                                          ("wcc 4->2", lambda: WeaklyConnectedComponents(wcc, max_iterations=10), 4, 6, 2)]:
            r = runs.run(spark, ReleaseAt(at, to), make(), args=args, start=start, verbose=False,
                         labels={"experiment": "probe", "job": name, "policy": "release", "rep": 0})
            t = r.table
            row = t[t.superstep == at].iloc[0]
            print(name, 'relayout_seconds', round(row.get('relayout_seconds', float('nan')), 2),
                  'actuation', round(row.get('actuation_seconds', float('nan')), 2),
                  'walls', ' '.join(f"{w:.2f}" for w in t.wall_seconds), 'barriers', ' '.join(f"{w:.2f}" for w in t.barrier_seconds), 'job', round(t.wall_seconds.sum()+t.barrier_seconds.sum()+t.relayout_seconds.fillna(0).sum()+t.actuation_seconds.fillna(0).sum(),2), flush=True)
        time.sleep(2)
        jobs, stages, tasks = groups(find_log(args.eventlog, spark.sparkContext.applicationId))
        for j, d in sorted(jobs.items()):
            if d['group'] and (d['group'].startswith('relayout') or d['group'].startswith('secure') or 'check' in d['group']):
                print(f"job {j} {d['group']} {d.get('end',0)-d['start']} ms  {d['callsite'][:70]}")
                for s in d['stages']:
                    if s in stages:
                        n, k, dur = stages[s]
                        print(f"    stage {s} {n} tasks={k} wall={dur}ms tasksum={tasks[s]:.0f}ms")
        gs = collections.Counter(d['group'] for d in jobs.values())
        print(gs.most_common(60))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
