"""Exception types. The CLI maps :class:`InputError` to exit status 2 with one message line."""
from __future__ import annotations


class IterflowError(Exception):
    """Base class for errors iterflow raises on purpose (with a message that says what to do)."""


class InputError(IterflowError):
    """Bad user input: a file, a line in it, or a parameter. The CLI exits 2."""


class ClusterError(IterflowError):
    """The embedded cluster could not be started, reached or stopped."""
