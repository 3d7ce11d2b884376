"""Where a cold ``target`` starts, judged on every recorded Pareto session: the cluster calibration's
reading of the sizes against the session's own jobs at those sizes.

    .venv/bin/python experiments/cold_start_scan.py [--ties 0.05,0.10,0.15] [--sessions stop4,stop5]

No Spark. A cold ``target`` (no run of the program known) starts at the fastest size the cluster's
calibration job measured (:meth:`~iterflow.model.contention.Contention.fastest`: the fewest slots
whose steady superstep is within a tie of the fastest one's). Each session of
``experiments/results`` with a cluster profile (``pareto_<tag>_cluster_profile.json``) measured that
calibration and then its jobs (PageRank, WCC, k-means) statically at every size, before and after
the adaptive runs (``pareto_<tag>.csv``). Printed:

* how the calibration's ratios between sizes (3 against 4, 2 against 4) follow the jobs' ratios of
  static medians in the same session -- correlation, and the spread of each (log);
* per tie: where the start would be, and how far the jobs' static median at that size is from the
  session's fastest static size (within 5 %: a start that can meet a target at the fastest size's
  time, the Pareto goal's tightest, within its 5 % tolerance) and the start's mean size (what the
  run holds until it can release, at a release's price).

What the scan cannot say: what each start costs a whole ``target`` run (releases, their price,
scale-outs when behind) -- ``pareto.py --target-start 3,4`` measures that side by side.
"""
from __future__ import annotations

import argparse
import re

import numpy as np
import pandas as pd

from harness import RESULTS

from iterflow.simulate.calibrate import load_profile


def sessions(pattern: str | None) -> pd.DataFrame:
    """One row per (session, job): the calibration's steady superstep per slot count (``cal<m>``)
    and the job's static median job seconds per size (``job<e>``)."""
    rows = []
    for path in sorted(RESULTS.glob("pareto_*_cluster_profile.json")):
        tag = path.name[len("pareto_"):-len("_cluster_profile.json")]
        table = RESULTS / f"pareto_{tag}.csv"
        if (pattern and not re.search(pattern, tag)) or not table.is_file():
            continue
        profile = load_profile(path)
        walls = {float(k): float(np.median(v)) for k, v in profile.steady_walls().items() if v}
        if len(walls) < 2:
            continue  # a profile from before stop 29 kept no supersteps
        d = pd.read_csv(table)
        st = d[d["policy"].str.startswith("static-")]
        for job, g in st.groupby("job"):
            med = g.groupby("policy")["job_seconds"].median()
            rows.append({"session": tag, "job": job, "measured_at": profile.measured_at,
                         **{f"cal{int(k)}": v for k, v in walls.items()},
                         "throughput": throughput_start(profile),
                         **{f"job{p.split('-')[1]}": v for p, v in med.items()}})
    return pd.DataFrame(rows)


def pooled(r: pd.DataFrame, W: int, last: int | None = None) -> pd.DataFrame:
    """``r`` with each session's calibration replaced by the median over it and the cluster's
    calibrations before it (``last`` of them at most), each as ratios to its own largest size."""
    order = r.drop_duplicates("session").sort_values("measured_at")
    cols = [f"cal{m}" for m in range(1, W + 1)]
    ratios = order.set_index("session")[cols].div(order.set_index("session")[f"cal{W}"], axis=0)
    out = r.copy()
    for i, tag in enumerate(ratios.index):
        seen = ratios.iloc[max(0, i + 1 - last) if last else 0:i + 1]
        out.loc[out["session"] == tag, cols] = seen.median().to_numpy()
    return out


def throughput_start(profile: object, W: int = 4) -> int:
    """The start the calibration's task slow-down alone gives (its walls left out): the fewest
    slots with the most task throughput."""
    from dataclasses import replace

    slow = replace(profile.contention(), walls=())
    return int(slow.fastest(list(range(1, W + 1))).index) + 1


def follow(r: pd.DataFrame, a: int, b: int) -> str:
    """How the calibration's ``a``-against-``b`` ratio follows the jobs'."""
    cal, job = np.log(r[f"cal{a}"] / r[f"cal{b}"]), np.log(r[f"job{a}"] / r[f"job{b}"])
    ok = cal.notna() & job.notna()
    cal, job = cal[ok], job[ok]
    return (f"  {a} against {b}: calibration median {np.exp(cal.median()):.2f}x, jobs {np.exp(job.median()):.2f}x; "
            f"correlation {np.corrcoef(cal, job)[0, 1]:+.2f} over {ok.sum()} (session, job) pairs; spread (std of "
            f"the log) calibration {cal.std():.3f}, jobs {job.std():.3f}")


def starts(r: pd.DataFrame, tie: float, W: int) -> pd.Series:
    """The start each session's calibration gives at ``tie`` (the fewest measured slots within it)."""
    from iterflow.model.contention import Contention

    def one(row: pd.Series) -> int:
        walls = tuple((float(m), float(row[f"cal{m}"])) for m in range(1, W + 1) if pd.notna(row.get(f"cal{m}")))
        return int(Contention(walls=walls).fastest(list(range(1, W + 1)), tie=tie).index) + 1
    return r.apply(one, axis=1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ties", default="0.05,0.10,0.15,0.20,0.25")
    ap.add_argument("--sessions", default=None, help="a regular expression the session tags must match")
    ap.add_argument("--workers", type=int, default=4)
    args = ap.parse_args()
    try:
        ties = [float(t) for t in args.ties.split(",")]
    except ValueError:
        raise SystemExit(f"--ties {args.ties!r}: want numbers, comma-separated")
    W = args.workers
    r = sessions(args.sessions)
    need = [f"cal{W}", f"job{W}"] + [f"job{e}" for e in range(1, W)]
    if r.empty or any(c not in r for c in need):
        raise SystemExit("no session with a cluster profile and static runs at every size in experiments/results")
    r = r.dropna(subset=need)
    print(f"{len(r)} (session, job) pairs from {r['session'].nunique()} sessions "
          f"({', '.join(f'{j} {n}' for j, n in r['job'].value_counts().items())})")
    print("the calibration's ratio of steady supersteps between sizes against the jobs' ratio of static medians:")
    for a in range(W - 1, 1, -1):
        print(follow(r, a, W))
    fastest = r[[f"job{e}" for e in range(1, W + 1)]].min(axis=1)
    print("per tie: the start, and the job's static median there over the session's fastest static size's")
    pools = {"pooled": pooled(r, W), "pooled (last 5)": pooled(r, W, 5)}
    for tie in [*ties, *(f"{k}, tie {t:.0%}" for k in pools for t in ties), "task throughput",
                *(f"always {e}" for e in range(2, W + 1))]:
        pool = next((v for k, v in pools.items() if str(tie).startswith(k + ",")), None)
        s = (starts(r, tie, W) if isinstance(tie, float) else r["throughput"].astype(int) if tie == "task throughput"
             else starts(pool, float(tie.split()[-1].rstrip("%")) / 100, W) if pool is not None
             else pd.Series(int(tie.split()[1]), index=r.index))
        over = np.array([row[f"job{e}"] for (_, row), e in zip(r.iterrows(), s)]) / fastest.to_numpy()
        per = ", ".join(f"{e}: {(s == e).sum()}" for e in range(1, W + 1) if (s == e).any())
        jobs = "; ".join(f"{j} {np.mean(over[(r['job'] == j).to_numpy()] <= 1.05):.0%}" for j in sorted(r["job"].unique()))
        print(f"  {f'tie {tie:.0%}' if isinstance(tie, float) else tie}: starts {per} (mean {s.mean():.2f}); within 5% of the fastest static size "
              f"{np.mean(over <= 1.05):.0%} ({jobs}), within 10% {np.mean(over <= 1.10):.0%}; median {np.median(over):.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
