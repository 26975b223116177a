"""The two variants a graph's turn subgraphs are compiled in: ``visible`` and ``lean``.

Defined apart from graphs/exported.py (which re-exports both names) so that the registry
(graphs/registry.py) can name the variant without importing the exported graphs' machinery,
which itself reads the registry (graphs/first_use.py).
"""

from __future__ import annotations

from typing import Literal

from factdebate.core.errors import ConfigError

Turns = Literal["visible", "lean"]
"""How a graph runs its turn subgraphs: ``visible`` (checkpointed, drawn, interruptible; Studio,
the server, Python users) or ``lean`` (no inner checkpoints; the CLI and ``eval``)."""


def check_turns(turns: str) -> Turns:
    """``turns`` if it names a variant, else ConfigError."""
    if turns not in ("visible", "lean"):
        raise ConfigError(f"unknown turns variant {turns!r}", "use 'visible' or 'lean'")
    return turns  # type: ignore[return-value]
