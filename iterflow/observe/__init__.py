"""Observation: statistics of a superstep's Spark jobs, executor snapshots, event-log reading."""
