"""The embedded Spark standalone cluster: master and workers (``local``), the session, RPC
authentication, the CPU share, the orphan watchdog and the JVM jars."""
