"""Rule filters: which users and groups a rule applies to (spec D6-D8, J)."""

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
    """Either a set of literal names or one unanchored regexp; empty when neither is set."""

    names: frozenset[str] = frozenset()
    pattern: RE2Regexp | None = None

    @property
    def empty(self) -> bool:
        """No names and no regexp."""
        return not self.names and self.pattern is None

    def matches(self, name: str) -> bool:
        """Literal names match exactly; a regexp is an unanchored RE2 search, not a full match."""
        if self.pattern is not None:
            return self.pattern.contains_match(name)
        return name in self.names

    def describe(self) -> str:
        """Short text for the rule-set log line."""
        return f"/{self.pattern.pattern}/" if self.pattern is not None else ",".join(sorted(self.names))


@dataclass(frozen=True, slots=True)
class RuleFilter:
    """An allow or deny filter over the submitting user and groups."""

    allow: bool = True
    users: NameMatcher = NameMatcher()
    groups: NameMatcher = NameMatcher()

    def admits(self, user: str, groups: Sequence[str]) -> bool:
        """Spec J8: an empty filter gives its type; a match gives the type; no match gives the opposite."""
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
    """Spec D6-D8: the validator's checks on a filter.

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
        return NameMatcher(pattern=compile_re2(entries[0]))
    names: set[str] = set()
    for entry in entries:
        if charset(entry):
            names.add(entry)
        else:
            _LOG.warning("ignoring filter %s entry %r: not a valid %s name", kind, entry, kind)
    return NameMatcher(names=frozenset(names))


def build_filter(filter_type: str, users: Sequence[str], groups: Sequence[str]) -> RuleFilter:
    """Build a validated filter (check_filter ran first): one non-name entry is a regexp (J3), lists are
    literal names (J4)."""
    return RuleFilter(
        allow=filter_type.lower() != "deny",
        users=_matcher("user", users, matches_filter_user),
        groups=_matcher("group", groups, matches_filter_group),
    )
