"""factdebate.run: running a graph on an input - run setup, checkpointers, the claim runner."""
