"""API keys -> user identities for the LangGraph server (read once from the server's environment).

Sources, all optional and combined:

* ``FACTDEBATE_API_KEYS="alice:key1,bob:key2"``: comma-separated ``identity:key`` pairs;
* ``FACTDEBATE_API_KEYS_FILE=/path``: one ``identity:key`` per line (blank lines and ``#``
  comments ignored). The file must not be readable or writable by "others" (``chmod 600``): a
  world-readable keys file is refused, so the server does not start with leaked-by-design keys;
* ``FACTDEBATE_API_KEY=key``: the single-key form of earlier versions, identity ``default``.

An identity may hold several keys (rotation); one key may not belong to two identities. Identities
are short names (letters, digits, ``_ @ -``; no ``:``, so an identity can never collide with
the ``factdebate:...`` store namespaces the server keeps for itself; no ``.``, which separates
store namespace labels in the API). Keys need 12 characters or
more. Any configuration error raises :class:`ConfigError` naming the source and the remedy.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from factdebate.core import secrets_filter
from factdebate.core.errors import ConfigError

DEFAULT_IDENTITY = "default"
"""Identity of the single ``FACTDEBATE_API_KEY``."""
MIN_KEY_CHARS = 12
RESERVED_IDENTITIES = frozenset({"langgraph-studio-user", "local-development"})
"""Identities the server gives to Studio's local bypass and to ``FACTDEBATE_AUTH=off``."""
_IDENTITY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_@-]{0,63}")


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8")).digest()


@dataclass(frozen=True)
class KeyRing:
    """Configured keys (as SHA-256 digests) and the identity each one maps to."""

    entries: tuple[tuple[bytes, str], ...] = ()

    def __bool__(self) -> bool:
        """True when at least one key is configured."""
        return bool(self.entries)

    @property
    def identities(self) -> list[str]:
        """Configured identities, in order of first appearance."""
        return list(dict.fromkeys(identity for _, identity in self.entries))

    def identify(self, presented: str) -> str | None:
        """The identity of ``presented``, or None.

        Every configured key is compared (``hmac.compare_digest`` on fixed-length digests), so the
        time taken reveals neither which key matched nor how much of a key was right.
        """
        probe = _digest(presented)
        found: str | None = None
        for digest, identity in self.entries:
            if hmac.compare_digest(probe, digest) and found is None:
                found = identity
        return found


def _parse_pair(text: str, where: str) -> tuple[str, str]:
    identity, sep, key = text.partition(":")
    identity, key = identity.strip(), key.strip()
    if not sep or not identity or not key:
        raise ConfigError(f"{where}: expected 'identity:key'", "write one identity:key pair")
    if not _IDENTITY.fullmatch(identity):
        raise ConfigError(f"{where}: identity {identity!r} is not a short name",
                          "use letters, digits and _ @ - (at most 64 characters)")
    if identity in RESERVED_IDENTITIES:
        raise ConfigError(f"{where}: identity {identity!r} is reserved", "choose another name")
    if len(key) < MIN_KEY_CHARS:
        raise ConfigError(f"{where}: the key of {identity!r} is shorter than {MIN_KEY_CHARS} "
                          "characters", "generate one: python -c 'import secrets; "
                          "print(secrets.token_urlsafe(32))'")
    return identity, key


def _file_pairs(path: Path) -> list[tuple[str, str]]:
    try:
        mode = path.stat().st_mode
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"FACTDEBATE_API_KEYS_FILE {path} cannot be read ({exc.strerror})",
                          "point it at a readable file of identity:key lines") from exc
    if mode & (stat.S_IROTH | stat.S_IWOTH):
        raise ConfigError(f"FACTDEBATE_API_KEYS_FILE {path} is readable or writable by every "
                          "user of this machine", f"run: chmod 600 {path}")
    return [
        _parse_pair(line, f"FACTDEBATE_API_KEYS_FILE {path} line {n}")
        for n, line in enumerate(lines, 1)
        if line.strip() and not line.lstrip().startswith("#")
    ]


def load_keyring(env: Mapping[str, str] | None = None) -> KeyRing:
    """All configured keys from ``env`` (default ``os.environ``).

    Raises:
        ConfigError: A malformed pair, a short key, a reserved identity, a key given to two
            identities, or an unreadable / world-readable keys file.
    """
    env = os.environ if env is None else env
    pairs: list[tuple[str, str]] = []
    if single := env.get("FACTDEBATE_API_KEY", "").strip():
        pairs.append(_parse_pair(f"{DEFAULT_IDENTITY}:{single}", "FACTDEBATE_API_KEY"))
    for n, item in enumerate(env.get("FACTDEBATE_API_KEYS", "").split(","), 1):
        if item.strip():
            pairs.append(_parse_pair(item, f"FACTDEBATE_API_KEYS item {n}"))
    if path := env.get("FACTDEBATE_API_KEYS_FILE", "").strip():
        pairs.extend(_file_pairs(Path(path).expanduser()))
    owners: dict[bytes, str] = {}
    for identity, key in pairs:
        digest = _digest(key)
        if owners.setdefault(digest, identity) != identity:
            raise ConfigError(f"one API key is given to both {owners[digest]!r} and {identity!r}",
                              "give every identity its own key")
    secrets_filter.register(*(key for _, key in pairs))  # no reply or log line shows a key
    return KeyRing(tuple((digest, identity) for digest, identity in owners.items()))


TEAMS_ENV = "FACTDEBATE_TEAMS"
"""``team:identity,identity;team:identity,...``: identities that share a review queue."""


@dataclass(frozen=True)
class Teams:
    """Teams of identities (``FACTDEBATE_TEAMS``): a member reviews the threads of the team."""

    members: tuple[tuple[str, frozenset[str]], ...] = ()

    def reviewers_of(self, identity: str) -> frozenset[str]:
        """The owners whose threads ``identity`` may review: itself and every teammate of every
        team it belongs to."""
        out = {identity}
        for _, team in self.members:
            if identity in team:
                out |= team
        return frozenset(out)


def load_teams(env: Mapping[str, str] | None = None,
               identities: list[str] | None = None) -> Teams:
    """The teams of ``FACTDEBATE_TEAMS`` in ``env`` (default ``os.environ``); none when unset.

    ``identities``, when given, are the configured ones: a member that is not one is refused (a
    misspelt name would silently leave a reviewer out).

    Raises:
        ConfigError: A malformed team, a team named twice, a member that is not a short name,
            reserved, or (given ``identities``) not configured.
    """
    env = os.environ if env is None else env
    teams: dict[str, frozenset[str]] = {}
    for n, item in enumerate(env.get(TEAMS_ENV, "").split(";"), 1):
        if not item.strip():
            continue
        where = f"{TEAMS_ENV} team {n}"
        name, sep, rest = item.partition(":")
        name = name.strip()
        members = [m.strip() for m in rest.split(",") if m.strip()]
        if not sep or not _IDENTITY.fullmatch(name) or not members:
            raise ConfigError(f"{where}: expected 'team:identity,identity'",
                              "write teams as desk1:alice,bob;desk2:carol")
        if name in teams:
            raise ConfigError(f"{where}: team {name!r} is named twice", "merge its members")
        for member in members:
            if not _IDENTITY.fullmatch(member) or member in RESERVED_IDENTITIES:
                raise ConfigError(f"{where}: {member!r} is not an identity of this server",
                                  "use the identities of FACTDEBATE_API_KEYS")
            if identities is not None and member not in identities:
                raise ConfigError(f"{where}: {member!r} has no API key on this server",
                                  "give it a key in FACTDEBATE_API_KEYS, or remove it")
        teams[name] = frozenset(members)
    return Teams(tuple(teams.items()))
