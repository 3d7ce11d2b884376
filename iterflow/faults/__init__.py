"""Faults: recovery from lost executors (``recovery``) and resuming after a lost driver (``resume``)."""
