"""The resource model: superstep time at other scale-outs (``resource``), its numeric fits
(``fits``), and the trace protocols it is judged by (``traces``: Bell, Ellis)."""
