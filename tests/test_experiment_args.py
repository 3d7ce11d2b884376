"""The experiments' shared options (``experiments/harness.parse_args``): no Spark."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))

from harness import parse_args  # noqa: E402


def test_data_defaults_to_the_mode_and_an_experiment_with_its_own_inputs_refuses_it(monkeypatch, capsys):
    """``--data`` follows ``--quick`` where an experiment reads it; ``pareto.py`` (``data=False``)
    runs its own inputs in both modes, so ``--data`` there is an error naming the option, exit 2,
    not a setting silently ignored."""
    monkeypatch.setattr(sys, "argv", ["x", "--quick"])
    assert parse_args("doc", "x").data == "small"
    monkeypatch.setattr(sys, "argv", ["x"])
    assert parse_args("doc", "x").data == "large"
    monkeypatch.setattr(sys, "argv", ["x", "--quick"])
    assert parse_args("doc", "x", data=False).data is None
    monkeypatch.setattr(sys, "argv", ["x", "--data", "small"])
    with pytest.raises(SystemExit) as exc:
        parse_args("doc", "x", data=False)
    assert exc.value.code == 2 and "--data" in capsys.readouterr().err
