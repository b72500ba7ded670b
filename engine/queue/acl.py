"""Queue access control lists (spec K1-K5)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from engine.errors import QueueConfigError
from engine.queue.names import matches_acl_group, matches_acl_user

__all__ = ["NO_ACCESS", "Acl", "check_acl_syntax", "parse_acl"]

_LOG = logging.getLogger(__name__)
_WILDCARD = "*"


@dataclass(frozen=True, slots=True)
class Acl:
    """A parsed ACL; `raw` is kept so draining queues can be stored and rebuilt from state."""

    raw: str = ""
    everyone: bool = False
    users: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()

    def allows(self, user: str, groups: Iterable[str]) -> bool:
        """Exact, case-sensitive matching of the user or any group (K5)."""
        if self.everyone or user in self.users:
            return True
        return any(group in self.groups for group in groups)


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
    everyone = raw.strip() == _WILDCARD
    user_entries = fields[0].split(",")
    group_entries = fields[1].split(",") if len(fields) == 2 else []
    users: set[str] = set()
    groups: set[str] = set()
    if user_entries == [_WILDCARD]:
        everyone = True
    else:
        for entry in user_entries:
            if matches_acl_user(entry):
                users.add(entry)
            elif entry:
                _LOG.warning("ignoring ACL user %r in %r: not a valid user name", entry, raw)
    if group_entries == [_WILDCARD]:
        everyone = True
    else:
        for entry in group_entries:
            if matches_acl_group(entry):
                groups.add(entry)
            elif entry:
                _LOG.warning("ignoring ACL group %r in %r: not a valid group name", entry, raw)
    return Acl(raw=raw, everyone=everyone, users=frozenset(users), groups=frozenset(groups))
