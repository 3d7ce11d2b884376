"""Main script for ``spark-submit``: the ``iterflow`` command line inside the driver that
spark-submit started (``make dist`` copies it to ``dist/``; ship the packages with
``--py-files dist/iterflow.zip``).

    spark-submit --properties-file ~/.iterflow/spark-submit.conf --py-files dist/iterflow.zip \\
        dist/iterflow_main.py run pagerank --input GRAPH --output DIR [--policy ...]

Under spark-submit, ``iterflow run`` uses spark-submit's master and settings and starts no
cluster of its own (see ``iterflow.cluster.session.submitted_conf``).
"""
from __future__ import annotations

import sys

from iterflow.app.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
