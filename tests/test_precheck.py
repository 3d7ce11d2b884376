"""Input checked before any JVM starts (no Spark): the head of a local file, with the same
verdict the Spark-side parse gives (its Python mirror, ``graphio._first_bad_line``)."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iterflow.app.spec import JobSpec
from iterflow.errors import InputError
from iterflow.inputs import precheck
from iterflow.inputs.graphio import _EDGE, _SKIP, _first_bad_line


def test_a_binary_or_malformed_input_is_rejected_by_the_spec_with_its_line(tmp_path):
    binary = tmp_path / "g.bin"
    binary.write_bytes(b"\x00\x01\x02\xff junk")
    with pytest.raises(InputError, match=r"g\.bin: line 1: expected 'src dst \[weight\]'") as err:
        JobSpec("pagerank", str(binary), str(tmp_path / "out")).validate()
    assert "\n" not in str(err.value)
    bad = tmp_path / "g.txt"
    bad.write_text("# comment\n1 2\n3 x\n")
    with pytest.raises(InputError, match=r"g\.txt: line 3: .* got '3 x'"):
        JobSpec("wcc", str(bad), str(tmp_path / "out")).validate()
    pts = tmp_path / "p.csv"
    pts.write_text("a,b\n1,2\n\n3\n")
    with pytest.raises(InputError, match=r"p\.csv: line 4: expected 2 columns, got 1"):
        JobSpec("kmeans", str(pts), str(tmp_path / "out"), k=2).validate()
    pts.write_text("1,2\n3,nan\n")
    with pytest.raises(InputError, match=r"line 2: NaN or infinite"):
        JobSpec("kmeans", str(pts), str(tmp_path / "out"), k=2).validate()
    assert not (tmp_path / "out").exists()


def test_a_bad_line_past_the_head_is_left_to_spark(tmp_path, monkeypatch):
    monkeypatch.setattr(precheck, "HEAD_BYTES", 64)
    path = tmp_path / "g.txt"
    path.write_text("1 2\n" * 40 + "oops\n")
    precheck.check_lines(path, _EDGE, _SKIP, "edges")  # the head is fine; Spark's parse finds line 41
    assert _first_bad_line(str(path), _EDGE) == (41, "oops")


@settings(max_examples=300, deadline=None)
@given(body=st.lists(st.sampled_from(["1 2", " 3\t4 ", "5 6 0.5", "# x \x00\xff", "", "7", "a b", "8 9\r",
                                      "\x0c1 2", "1 2\x85", "12345678901234567890 1"]), max_size=12)
       .map(lambda ls: "\n".join(ls)), tail=st.sampled_from(["", "\n", "\r\n"]))
def test_the_head_check_agrees_with_the_spark_parse(tmp_path_factory, body, tail):
    path = tmp_path_factory.mktemp("g") / "g.txt"
    path.write_bytes((body + tail).encode("utf-8", "surrogateescape"))
    spark_verdict = _first_bad_line(str(path), _EDGE)
    try:
        precheck.check_lines(path, _EDGE, _SKIP, "edges")
        ours = None
    except InputError as exc:
        ours = int(re.search(r"line (\d+):", str(exc)).group(1))
    assert ours == (spark_verdict[0] if spark_verdict else None)
