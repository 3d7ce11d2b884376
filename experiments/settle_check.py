"""How well a cold model predicts the supersteps after a release, fed by the driver's rule.
No Spark; seconds.

    .venv/bin/python experiments/settle_check.py stop56all stop58all ...

For every adaptive run of each ``experiments/results/pareto_<TAG>_supersteps.csv`` that scaled
in, the run's records are fed to a cold model (the session's cluster profile alone, as a run on
an empty MLflow store has it) by :func:`~iterflow.model.live.feed`, and each superstep at the
released size -- from the second after the release (the first is the release's own cold one) to
the eighth -- is predicted at the barrier before it. Printed per job: how many of those
supersteps the rule kept from the model as the release's transient, and the predictions'
median |error| and bias, by the superstep's age at the new size. Why: the rule that keeps a
release's transient from the model (:data:`~iterflow.model.live.SETTLE_TOL`) must not also keep
out what is the model's own error at the new size -- ``target``'s forecast then runs on the
prediction it made before the release for up to five supersteps (stop58all's k-means: 0.525 s a
superstep predicted while 0.65-1.17 s ran).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from iterflow.loop.records import Predicted, epoch_ages  # noqa: E402
from iterflow.model.live import LiveModel, feed  # noqa: E402
from iterflow.model.replay import ReplayModel  # noqa: E402
from iterflow.simulate.calibrate import load_profile, policy_of  # noqa: E402
from iterflow.simulate.recorded import load  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
AGES = range(2, 9)


def after_releases(run, slow) -> list[tuple[int, float, bool]]:
    """``(age at the released size, predicted / measured - 1, kept out)`` of ``run``'s
    supersteps after each of its scale-ins, the model fed as the driver feeds it."""
    model = LiveModel(replay=ReplayModel(contention=slow, tasks_follow_slots=True))
    history, out, released = [], [], False
    for rec, age in zip(run.records, epoch_ages(run.records)):
        prev = history[-1] if history else None
        if age == 1:  # an epoch starts: after a release, with the release's own cold superstep
            released = prev is not None and rec.executors < prev.executors
        predicted = model.predict_seconds(rec.ran.cores, rec.ran.work) if model.fitted else None
        cold = feed(model, rec, history, 1, rec.stats.stage_tasks if rec.stats else None, model.fitted)
        history.append(rec.with_(predicted=Predicted(cold_seconds=cold)))
        if released and age in AGES and predicted:
            out.append((age, predicted / rec.wall_seconds - 1, cold is not None))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tags", nargs="+", help="pareto_<TAG>_supersteps.csv in experiments/results")
    ap.add_argument("--out", default="settle_check", help="experiments/results/<OUT>.txt")
    args = ap.parse_args()
    found: dict[str, list[tuple[int, float, bool]]] = {}
    for tag in args.tags:
        path, prof = RESULTS / f"pareto_{tag}_supersteps.csv", RESULTS / f"pareto_{tag}_cluster_profile.json"
        for p in (path, prof):
            if not p.exists():
                print(f"error: {p}: no such file", file=sys.stderr)
                return 2
        slow = load_profile(prof).contention()
        for o in load(str(path)):
            if policy_of(o) != "static":
                found.setdefault(str(o.labels.get("job")), []).extend(after_releases(o, slow))
    lines = []
    for job, rows in sorted(found.items()):
        kept = sum(k for _, _, k in rows)
        lines.append(f"{job}: {len(rows)} supersteps at ages {AGES.start}-{AGES.stop - 1} after a release, "
                     f"{kept} kept from the model as its transient")
        for a in AGES:
            e = np.array([x for g, x, _ in rows if g == a])
            if len(e):
                lines.append(f"  age {a}: n={len(e)} median |err| {np.median(np.abs(e)):.3f} bias {np.median(e):+.3f} "
                             f"kept out {sum(k for g, _, k in rows if g == a)}")
    print("\n".join(lines))
    (RESULTS / f"{args.out}.txt").write_text(f"# {' '.join(sys.argv)}\n" + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
