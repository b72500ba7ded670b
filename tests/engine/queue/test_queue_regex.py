"""Filter regexps are RE2 as Go's `regexp` compiles and matches them, never a backtracking engine."""

from __future__ import annotations

from typing import Any

import pytest
from queue_testkit import config_error_of, load, submit_once

from engine.queue.placement import Placed
from engine.queue.regex import RE2Regexp, compile_re2

_NOT_A_REGEXP = "invalid rule filter {kind} list is not a proper list or regexp: [{entry}]"


@pytest.mark.parametrize(
    ("pattern", "valid"),
    [
        ("(?U)a+", True),  # ungreedy flag
        ("a(?i)L", True),  # a flag set mid-pattern (Python's re refuses it)
        ("(?i)d(?-i)EV", True),  # a flag cleared
        ("(?i-U:a)", True),
        ("(?)", True),  # an empty flag group, as Go accepts
        ("(?P<n>a)", True),
        ("(?<n>a)", True),
        ("(?P<n>a)(?P<n>b)", True),  # Go does not check for duplicate names
        ("(?P<n_1>a)", True),
        (r"\p{Lu}", True),
        (r"[\pL]", True),
        (r"\pL+", True),
        (r"\PL", True),
        (r"\p{^Greek}", True),
        ("[[:alpha:]]", True),
        ("[[:^alpha:]]", True),
        ("[]a]", True),  # a leading `]` is a member
        ("a{1000}", True),  # the repeat limit itself
        ("x{1000,}", True),
        ("(a{10}){100}", True),  # nested repeats multiply to the limit
        ("a{,3}", True),  # literal text in RE2, not a repeat
        (r"\pL{1000}", True),  # needs more than C++ RE2's default memory budget; Go accepts it
        (r"\Q\C(?=\E", True),  # quoted text is literal
        (r"\z", True),
        (r"\012", True),  # octal
        (r"\x{10FFFF}", True),
        ("a{1001}", False),  # over the repeat limit
        ("x{0,1001}", False),
        ("x{1001,}", False),
        ("(a{100}){100}", False),  # nested repeats multiply past the limit
        ("(?=a)b", False),  # look-around
        ("(?!a)b", False),
        ("(?<=a)b", False),
        ("(?<!a)b", False),
        (r"(a)\1", False),  # back-references
        ("(?P<n>a)(?P=n)", False),
        ("a++", False),  # possessive quantifiers
        ("a*+", False),
        ("a?+", False),
        ("a{2}+", False),
        ("a**", False),  # doubled quantifiers
        ("a{2}{3}", False),
        ("(?>a)", False),  # atomic group
        ("(?#note)a", False),  # comment group
        ("(?x)a", False),  # Go's flags are i, m, s and U
        (r"\C", False),  # any byte: C++ RE2 accepts it, Go does not
        (r"a\Cb", False),
        (r"\Qa\Eb\C", False),  # the quote ended before `\C`
        ("(?P<é>a)", False),  # Go's group names are ASCII
        ("(?<>a)", False),
        (r"\Z", False),  # RE2's end of text is `\z`
        (r"\8", False),
        (r"\e", False),
        (r"\p{Foo}", False),
        ("[[:foo:]]", False),
        ("[z-a]", False),
        ("*", False),
        ("user[a-z", False),
        ("a)", False),
        ("\ud800+", False),  # not UTF-8
    ],
)
def test_pattern_validity(pattern: str, valid: bool) -> None:
    assert (compile_re2(pattern) is not None) is valid


@pytest.mark.parametrize(
    ("pattern", "subject", "matched"),
    [
        ("dev*", "xdex", True),  # unanchored: anything containing "de"
        ("user[0-1]", "superuser1", True),
        ("^user[0-1]$", "superuser1", False),
        ("^ops$", "ops", True),
        ("a$", "a\n", False),  # `$` is the end of the text, not before a final newline
        ("(?m)a$", "a\nb", True),
        ("^.$", "\n", False),
        ("(?s)^.$", "\n", True),
        ("[^a]", "\n", True),
        ("^.$", "é", True),  # one code point, not one byte
        ("(?i)^DEV$", "dev", True),
        ("(?i)d(?-i)EV", "dEV", True),
        ("(?i)d(?-i)EV", "dev", False),
        ("a(?i)L", "al", True),
        ("a(?i)L", "Al", False),
        ("(?U)^a+$", "aaa", True),
        ("(?i)k", "\u212a", True),  # Unicode simple folding: the Kelvin sign
        (r"^\p{Lu}", "Émile", True),
        (r"^\p{Lu}", "émile", False),
        (r"^[\pL]+$", "José", True),
        (r"^[\pL]+$", "jo3", False),
        (r"^\pL+$", "ñandú", True),
        ("^[[:alpha:]]+$", "abc", True),
        ("^[[:alpha:]]+$", "é", False),  # POSIX classes are ASCII
        (r"^\w+$", "é", False),  # so are Perl classes
        (r"^\d$", "\u0663", False),
        (r"\bdev\b", "my dev team", True),
        (r"\bdev\b", "devs", False),
        ("^a{,3}$", "a{,3}", True),
        ("^a{,3}$", "aaa", False),
        ("(?P<n>a)", "a", True),
        ("(?<n>b)c", "xbc", True),
        (r"\Q.*\E", "a.*b", True),
        (r"\Q.*\E", "ab", False),
        (r"^\x{1F600}$", "\U0001f600", True),
        (r"^x\x{FFFD}$", "x\ud800", True),  # a lone surrogate is matched as U+FFFD
        ("(a+)+$", "a" * 40, True),
        ("(a+)+$", "a" * 40 + "-", False),
    ],
)
def test_pattern_matches(pattern: str, subject: str, matched: bool) -> None:
    compiled = compile_re2(pattern)
    assert compiled is not None
    assert compiled.contains_match(subject) is matched


def test_compiled_regexps_are_equal_by_pattern_text() -> None:
    first, second, other = compile_re2("^dev"), compile_re2("^dev"), compile_re2("^ops")
    assert isinstance(first, RE2Regexp)
    assert first == second
    assert first != other
    assert first.pattern == "^dev"


@pytest.mark.parametrize(
    ("kind", "entry"),
    [
        ("users", "a(?i)L"),
        ("users", r"\pL+"),
        ("users", "(?<n>a)"),
        ("groups", "(?i)d(?-i)EV"),
        ("groups", "[[:alpha:]]+"),
        ("users", "a{,3}"),
    ],
)
def test_valid_re2_filters_are_accepted_by_the_configuration(kind: str, entry: str) -> None:
    load(rules=[{"name": "user", "create": True, "filter": {kind: [entry]}}])


@pytest.mark.parametrize(
    ("kind", "entry"),
    [
        ("users", "a{1001}"),
        ("users", "(?<=a)b"),
        ("users", r"(a)\1"),
        ("users", "a++"),
        ("groups", r"\C+"),
        ("groups", "(?P<é>a)"),
    ],
)
def test_invalid_re2_filters_are_configuration_errors(kind: str, entry: str) -> None:
    rules = [{"name": "user", "create": True, "filter": {kind: [entry]}}]
    assert config_error_of(rules=rules) == _NOT_A_REGEXP.format(kind=kind[:-1], entry=entry)


_CATASTROPHIC = "(a+)+$"


@pytest.mark.parametrize(
    ("kind", "subject", "queue"),
    [
        ("users", "a" * 40 + "-", "root.sandbox"),
        ("users", "a" * 100_000 + "-", "root.sandbox"),
        ("users", "a" * 40, "root.alice"),
        ("users", "a" * 100_000, "root.alice"),
        ("groups", "a" * 40 + "-", "root.sandbox"),
        ("groups", "a" * 100_000 + "-", "root.sandbox"),
        ("groups", "a" * 100_000, "root.alice"),
    ],
)
def test_catastrophic_pattern_is_linear_through_the_engine(kind: str, subject: str, queue: str) -> None:
    """A backtracking engine would not return for the non-matching subjects; RE2 answers in linear time."""
    rules: list[dict[str, Any]] = [
        {"name": "fixed", "value": "root.alice", "filter": {kind: [_CATASTROPHIC]}},
        {"name": "fixed", "value": "root.sandbox"},
    ]
    fields = {"user": subject} if kind == "users" else {"user": "bob", "groups": ("ops", subject)}
    outcome = submit_once(load(rules=rules), **fields)
    assert isinstance(outcome, Placed), outcome
    assert outcome.queue == queue


_SANDBOX = {"name": "fixed", "value": "root.sandbox"}


@pytest.mark.parametrize(
    ("rule_filter", "user", "groups", "queue"),
    [
        # valid RE2 that an imitation refused
        ({"users": ["(?U)a+"]}, "alice", (), "root.alice"),
        ({"users": ["a(?i)L"]}, "aLice", (), "root.alice"),
        ({"users": ["a(?i)L"]}, "ALice", (), "root.sandbox"),
        ({"users": ["(?i)a(?-i)LICE"]}, "aLICE", (), "root.alice"),
        ({"users": ["(?i)a(?-i)LICE"]}, "alice", (), "root.sandbox"),
        ({"users": ["(?<n>al)"]}, "alice", (), "root.alice"),
        ({"users": [r"\p{Lu}"]}, "Alice", (), "root.alice"),
        ({"users": [r"[\pL]"]}, "alice", (), "root.alice"),
        ({"users": [r"^\pL+$"]}, "alice", (), "root.alice"),
        ({"users": [r"^\pL+$"]}, "alice1", (), "root.sandbox"),
        # regexps that matched differently
        ({"users": ["^[[:alpha:]]+$"]}, "alice", (), "root.alice"),
        ({"type": "deny", "groups": ["^.{,3}$"]}, "alice", ("dev",), "root.alice"),  # `{,3}` is literal text
        ({"type": "deny", "groups": ["^.{,3}$"]}, "alice", ("x{,3}",), "root.sandbox"),
        # a list whose entries are all dropped matches nobody
        ({"users": ["bob*", "1bad"]}, "bob", (), "root.sandbox"),
        ({"users": ["bob*", "1bad"]}, "bobby", (), "root.sandbox"),
        ({"type": "deny", "users": ["bob*", "1bad"]}, "bob", (), "root.bob"),
        ({"type": "deny", "groups": ["dev*", "a@b"]}, "alice", ("a@b",), "root.alice"),
    ],
)
def test_issue_classes_place_as_upstream(
    rule_filter: dict[str, Any], user: str, groups: tuple[str, ...], queue: str
) -> None:
    """Each class of difference found against YuniKorn's own placement code, through a whole placement."""
    rules: list[dict[str, Any]] = [{"name": "user", "create": True, "filter": rule_filter}, _SANDBOX]
    outcome = submit_once(load(rules=rules), user=user, groups=groups)
    assert isinstance(outcome, Placed), outcome
    assert outcome.queue == queue


@pytest.mark.parametrize("entry", ["a{1001}", "x{2,1001}", "(?P<n>a)(?P=n)"])
def test_invalid_re2_in_a_provided_rule_is_a_configuration_error(entry: str) -> None:
    rules = [{"name": "provided", "filter": {"users": [entry]}}]
    assert config_error_of(rules=rules) == _NOT_A_REGEXP.format(kind="user", entry=entry)
