"""The loop: the driver (the order of a superstep), the program contract, the run plan, the
typed superstep records and the ports the driver is handed."""
