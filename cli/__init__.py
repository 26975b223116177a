"""factdebate.cli: the command line (typer): verify, check, eval, compare, bench ...; terminal reports."""
