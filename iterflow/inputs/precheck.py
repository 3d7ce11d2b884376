"""Input checks that need no JVM: the head of a local input file, read in Python before any
Spark process starts, so a wrong file is rejected with its one error line in well under a
second (Spark's own parse of the whole file still runs and catches a bad line further on).

What is read: at most ``HEAD_BYTES`` of each file, decoded and split into lines as Spark's
text reader does (invalid UTF-8 replaced, lines end at ``\n``, ``\r\n`` or ``\r``); every
complete line must be what the format expects, by the same patterns as the Spark-side parse
(:mod:`iterflow.inputs.graphio`, :mod:`iterflow.inputs.pointsio`), so the two never disagree
about a line: a binary file fails at its first line, as it would in Spark.
"""
from __future__ import annotations

import csv
import math
import re
from pathlib import Path

from iterflow.errors import InputError

HEAD_BYTES = 1 << 20


def _head_lines(path: Path) -> list[tuple[int, str]]:
    """``(line number, text)`` of the complete lines in the first ``HEAD_BYTES`` of ``path``."""
    with open(path, "rb") as fh:
        head = fh.read(HEAD_BYTES)
        more = bool(fh.read(1))
    text = head.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the file (or head) ends with a newline
    elif more:
        lines.pop()  # the last line is cut off: Spark's parse checks it
    return list(enumerate(lines, 1))


def check_lines(path: Path, pattern: str, skip: str, what: str) -> None:
    """Every line of the file's head is blank, a comment, or matches ``pattern``."""
    rx, sk = re.compile(pattern, re.ASCII), re.compile(skip, re.ASCII)
    for n, line in _head_lines(path):
        if not sk.match(line) and not rx.match(line):
            raise InputError(f"{path}: line {n}: expected {what} with integer vertex ids, got {line.strip()[:80]!r}")


def check_points_csv(path: Path) -> None:
    """The head of a points CSV: an optional header, then rows of numbers of one width."""
    rows = [(n, line) for n, line in _head_lines(path) if line.strip()]
    if not rows:
        if path.stat().st_size == 0:
            raise InputError(f"{path}: no points (the file is empty)")
        return
    width = None
    for k, (n, line) in enumerate(rows):
        try:
            cells = next(csv.reader([line]))
        except csv.Error as exc:
            raise InputError(f"{path}: line {n}: not valid CSV ({exc})") from None
        if width is None:
            width = len(cells)
            if k == 0 and not all(_number(c) is not None for c in cells):
                continue  # a header
        if len(cells) != width:
            raise InputError(f"{path}: line {n}: expected {width} columns, got {len(cells)}")
        for cell in cells:
            v = _number(cell)
            if v is None:
                raise InputError(f"{path}: line {n}: not a number: {cell[:40]!r}")
            if not math.isfinite(v):
                raise InputError(f"{path}: line {n}: NaN or infinite value {cell[:40]!r}")


def _number(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:
        return None
