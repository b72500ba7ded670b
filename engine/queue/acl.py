"""Queue access control lists (spec K1-K5)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from engine.errors import QueueConfigError
from engine.queue.names import matches_acl_group, matches_acl_user

__all__ = ["NO_ACCESS", "Acl", "check_acl_syntax", "parse_acl"]

_LOG = logging.getLogger(__name__)
_WILDCARD = "*"
_WILDCARD_ONLY = [_WILDCARD]


@dataclass(frozen=True, slots=True)
class Acl:
    """A parsed ACL; `raw` is kept so draining queues can be stored and rebuilt from state."""

    raw: str = ""
    everyone: bool = False
    users: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()

    def allows(self, user: str, groups: Iterable[str]) -> bool:
        """Exact, case-sensitive matching of the user or any group (K5)."""
        return self.everyone or user in self.users or not self.groups.isdisjoint(groups)


NO_ACCESS = Acl()
"""The ACL of a queue without one: grants nobody (K7)."""


def check_acl_syntax(acl: str) -> None:
    """Spec D4: the validator's lenient check on whitespace-separated fields."""
    trimmed = acl.strip()
    if trimmed in ("", _WILDCARD):
        return
    if len(trimmed.split()) > 2:
        raise QueueConfigError(f"multiple spaces found in ACL: '{trimmed}'")


def parse_acl(raw: str) -> Acl:
    """Spec K2-K4: split on single spaces; entries outside the charset are dropped with a warning.

    Raises:
        QueueConfigError: more than two space-separated parts.
    """
    if raw == "":
        return Acl()
    fields = raw.split(" ")
    if len(fields) > 2:
        raise QueueConfigError(f"multiple spaces found in ACL: '{raw}'")
    user_entries = fields[0].split(",")
    group_entries = fields[1].split(",") if len(fields) == 2 else []
    users = _valid_entries(user_entries, matches_acl_user, "user", raw)
    groups = _valid_entries(group_entries, matches_acl_group, "group", raw)
    everyone = raw.strip() == _WILDCARD or _WILDCARD_ONLY in (user_entries, group_entries)
    return Acl(raw=raw, everyone=everyone, users=users, groups=groups)


def _valid_entries(entries: list[str], valid: Callable[[str], bool], what: str, raw: str) -> frozenset[str]:
    """The valid names of one ACL half; a lone wildcard is handled by the caller and yields no names."""
    if entries == _WILDCARD_ONLY:
        return frozenset()
    names: set[str] = set()
    for entry in entries:
        if valid(entry):
            names.add(entry)
        elif entry:
            _LOG.warning("ignoring ACL %s %r in %r: not a valid %s name", what, entry, raw, what)
    return frozenset(names)
