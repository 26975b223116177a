"""factdebate/cli."""
