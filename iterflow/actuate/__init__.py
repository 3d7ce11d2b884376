"""Actuation: executors through Spark's allocation client (``executors``); the bin layout
(``bins``), minimal-movement rescaling (``partitioning``) and hot-bin moves (``rebalance``)."""
