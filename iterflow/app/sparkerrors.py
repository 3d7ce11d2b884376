"""Turn Spark/py4j exceptions into one line a user can act on (no Java stack trace)."""
from __future__ import annotations

import re


def describe(exc: BaseException) -> tuple[str, int]:
    """``(message, exit status)``: status 2 when the cause is the user's input, else 1."""
    text = str(exc).strip()
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), type(exc).__name__)
    first = re.sub(r"^(py4j\.protocol\.)?Py4JJavaError: ", "", first)
    if "PATH_NOT_FOUND" in text or "Path does not exist" in text:
        m = re.search(r"(file:\S+|hdfs:\S+|s3a?:\S+)", text)
        return f"input not found: {m.group(1).rstrip('.') if m else first}", 2
    if "UNABLE_TO_INFER_SCHEMA" in text or "is not a Parquet file" in text or "CANNOT_READ_FILE" in text:
        return f"cannot read input: {first[:300]}", 2
    if _from_spark(exc):
        return f"Spark failed: {type(exc).__name__}: {first[:300]}", 1
    # not Spark's (``simulate``, ``model``, ``report`` run none): a bug of ours, said as one
    return f"internal error: {type(exc).__name__}: {first[:300]} (a bug in iterflow; -v prints its traceback)", 1


def _from_spark(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it was raised from) came out of PySpark or py4j."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if type(exc).__module__.split(".")[0] in ("pyspark", "py4j") or "org.apache.spark" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False
