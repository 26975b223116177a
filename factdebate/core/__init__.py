"""factdebate/core."""
