"""`make jars`: build iterflow's JVM classes at set-up (``python -m iterflow.jvm``)."""
import sys

from iterflow.jvm import build

built = build()
print(built if built else "iterflow's JVM classes not built (no javac?): Spark's own ways instead")
sys.exit(0)
