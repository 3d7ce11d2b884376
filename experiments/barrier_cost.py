"""What the policies' decisions cost at a barrier -- the framework's own time between two
supersteps, on the driver, while every executor waits -- replayed on recorded Pareto sessions.
No Spark; a minute.

    .venv/bin/python experiments/barrier_cost.py --tags stop63all [--against /tmp/head]

Each session's static-3 runs are replayed by the simulator (the cluster's profile as learned in
the session) under ``target`` (a target 1.15x the run), ``efficiency`` and ``fastest``, each
``--reps`` times; a barrier's cost is the least of its reps' ``decide`` wall time (the machine
is shared: the least is the cost, the rest is other load). ``--against DIR``: the same replays
with the code of another checkout (``git worktree add DIR COMMIT``), in its own process,
alternated with this one's rep by rep; printed side by side with the ratio, and whether every
decision and reason came out the same (an optimisation must not move one).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results"
POLICIES = ("target", "efficiency", "fastest")


def replay(tag: str) -> dict:
    """One rep in this process (the code on ``sys.path``): per (run, policy), each barrier's
    ``decide`` seconds and the decisions made."""
    from iterflow.simulate.calibrate import from_profile, load_profile
    from iterflow.simulate.cluster import simulate
    from iterflow.simulate.recorded import load
    from iterflow.simulate.whatif import Setup, build

    runs = load(str(RESULTS / f"pareto_{tag}_supersteps.csv"))
    params = from_profile(load_profile(RESULTS / f"pareto_{tag}_cluster_profile.json"))
    out = {}
    for k, run in enumerate(runs):
        if not run.name.endswith("static-3/0"):
            continue
        for name in POLICIES:
            opts = {"target_seconds": 1.15 * sum(r.wall_seconds for r in run.records)} if name == "target" else {}
            policy, times = build(name, Setup(3, 1, 4, None, 1.0, 0, opts)), []
            decide = policy.decide

            def timed(*a, _decide=decide, **kw):
                t = time.perf_counter()
                r = _decide(*a, **kw)
                times.append(time.perf_counter() - t)
                return r
            policy.decide = timed
            sim = simulate(run, policy, 3, 1, params)
            out[f"{run.name}#{k} {name}"] = {
                "seconds": times,
                "decisions": [[r.executors, round(r.wall_seconds, 9), r.decided.reason if r.decided else None]
                              for r in sim.records]}
    return out


def _rep(src: Path, tag: str) -> dict:
    """One rep of ``src``'s code, in a process of its own (its modules, not this one's)."""
    code = (f"import sys, json; sys.path.insert(0, {str(src)!r}); sys.path.insert(1, {str(Path(__file__).parent)!r}); "
            f"from barrier_cost import replay; print(json.dumps(replay({tag!r})))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(src)})
    return json.loads(done.stdout.splitlines()[-1])


def least(reps: list[dict]) -> dict[str, list[float]]:
    """Per (run, policy), each barrier's least seconds over the reps."""
    return {key: [min(r[key]["seconds"][i] for r in reps) for i in range(len(reps[0][key]["seconds"]))]
            for key in reps[0]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tags", default="stop63all", help="comma-separated sessions (results/pareto_<TAG>_*)")
    ap.add_argument("--against", type=Path, help="another checkout, replayed beside this one")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    lines = [f"# {' '.join(sys.argv)}", "a barrier's decide, the least of its reps (ms): median / mean per replay"]
    trees = [("this", ROOT)] + ([("against", args.against.resolve())] if args.against else [])
    for tag in args.tags.split(","):
        if not (RESULTS / f"pareto_{tag}_supersteps.csv").exists():
            print(f"error: {RESULTS / f'pareto_{tag}_supersteps.csv'}: no such table", file=sys.stderr)
            return 2
        reps: dict[str, list[dict]] = {name: [] for name, _ in trees}
        for _ in range(args.reps):  # alternated: the machine's load falls on both alike
            for name, src in trees:
                reps[name].append(_rep(src, tag))
        best = {name: least(r) for name, r in reps.items()}
        for key in best["this"]:
            cells = []
            for name, _ in trees:
                s = sorted(best[name][key])
                cells.append(f"{name} {1e3 * s[len(s) // 2]:5.1f} / {1e3 * sum(s) / len(s):5.1f}")
            same = ""
            if args.against:
                same = "  same decisions" if reps["this"][0][key]["decisions"] == reps["against"][0][key]["decisions"] \
                    else "  DECISIONS DIFFER"
                cells.append(f"ratio {sum(best['this'][key]) / sum(best['against'][key]):.2f}x")
            lines.append(f"  {tag} {key:<34} {len(best['this'][key]):>3} barriers  " + "  ".join(cells) + same)
        totals = {name: sum(sum(v) for v in b.values()) for name, b in best.items()}
        n = sum(len(v) for v in best["this"].values())
        lines.append(f"  {tag}: {n} barriers, " + ", ".join(f"{name} {1e3 * t / n:.1f} ms a barrier" for name, t in totals.items())
                     + (f"; ratio {totals['this'] / totals['against']:.2f}x" if args.against else ""))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
