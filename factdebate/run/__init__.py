"""factdebate/run."""
