"""factdebate/patches."""
