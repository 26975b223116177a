"""factdebate/server."""
