"""Rule filters: which users and groups a rule applies to, allow or deny, by literal names or one RE2 regexp."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from engine.errors import QueueConfigError
from engine.queue.names import matches_filter_group, matches_filter_user
from engine.queue.regex import RE2Regexp, compile_re2, has_regexp_character

__all__ = ["ALLOW_EVERYONE", "NameMatcher", "RuleFilter", "build_filter", "check_filter"]

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class NameMatcher:
    """Either a set of literal names or one unanchored regexp.

    `written` records whether the file listed any entry at all: a list whose entries were all dropped as
    invalid names is not empty, it matches nobody (so an allow filter rejects and a deny filter lets through).
    """

    names: frozenset[str] = frozenset()
    pattern: RE2Regexp | None = None
    written: bool = False

    @property
    def empty(self) -> bool:
        """No entries were written in the file."""
        return not self.written

    def matches(self, name: str) -> bool:
        """Literal names match exactly; a regexp is an unanchored RE2 search, not a full match."""
        if self.pattern is not None:
            return self.pattern.contains_match(name)
        return name in self.names

    def describe(self) -> str:
        """Short text for the rule-set log line."""
        if self.pattern is not None:
            return f"/{self.pattern.pattern}/"
        if self.written and not self.names:
            return "<nobody>"
        return ",".join(sorted(self.names))


@dataclass(frozen=True, slots=True)
class RuleFilter:
    """An allow or deny filter over the submitting user and groups."""

    allow: bool = True
    users: NameMatcher = NameMatcher()
    groups: NameMatcher = NameMatcher()

    def admits(self, user: str, groups: Sequence[str]) -> bool:
        """An empty filter gives its type; a match gives the type; no match gives the opposite."""
        if self.users.empty and self.groups.empty:
            return self.allow
        if self.users.matches(user) or any(self.groups.matches(group) for group in groups):
            return self.allow
        return not self.allow

    def describe(self) -> str:
        """Short text for the rule-set log line."""
        kind = "allow" if self.allow else "deny"
        return f"{kind}(users={self.users.describe()}; groups={self.groups.describe()})"


ALLOW_EVERYONE = RuleFilter()


def check_filter(filter_type: str, users: Sequence[str], groups: Sequence[str]) -> None:
    """The validator's checks on a filter: its type, and a single entry that must be a name or an RE2 regexp.

    Raises:
        QueueConfigError: the type is unknown or a single entry is neither a name nor a regexp.
    """
    if filter_type.lower() not in ("", "allow", "deny"):
        raise QueueConfigError(f"invalid rule filter type {filter_type}, filter type  must be either '', allow or deny")
    for kind, entries, charset in (("user", users, matches_filter_user), ("group", groups, matches_filter_group)):
        if len(entries) != 1:
            continue
        entry = entries[0]
        if charset(entry):
            continue
        if compile_re2(entry) is None or not has_regexp_character(entry):
            raise QueueConfigError(f"invalid rule filter {kind} list is not a proper list or regexp: [{entry}]")


def _matcher(kind: str, entries: Sequence[str], charset: Callable[[str], bool]) -> NameMatcher:
    if len(entries) == 1 and not charset(entries[0]):
        return NameMatcher(pattern=compile_re2(entries[0]), written=True)
    names: set[str] = set()
    for entry in entries:
        if charset(entry):
            names.add(entry)
        else:
            _LOG.warning("ignoring filter %s entry %r: not a valid %s name", kind, entry, kind)
    return NameMatcher(names=frozenset(names), written=bool(entries))


def build_filter(filter_type: str, users: Sequence[str], groups: Sequence[str]) -> RuleFilter:
    """Build a validated filter (check_filter ran first): one entry outside the name charset is a regexp, a
    longer list is literal names with the invalid ones dropped."""
    return RuleFilter(
        allow=filter_type.lower() != "deny",
        users=_matcher("user", users, matches_filter_user),
        groups=_matcher("group", groups, matches_filter_group),
    )
