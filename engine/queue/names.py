"""Queue, user and group name rules shared by validation, rules and the queue tree (spec D2, I, J2, K4)."""

from __future__ import annotations

import re

__all__ = [
    "INVALID_QUEUE_NAME",
    "RECOVERY_LEVEL",
    "RECOVERY_QUEUE",
    "ROOT",
    "is_fully_qualified",
    "is_valid_queue_level",
    "is_valid_rule_name",
    "matches_acl_group",
    "matches_acl_user",
    "matches_filter_group",
    "matches_filter_user",
    "normalize_partition",
    "parent_path",
    "replace_dots",
]

ROOT = "root"
RECOVERY_LEVEL = "@recovery@"
RECOVERY_QUEUE = f"{ROOT}.{RECOVERY_LEVEL}"
INVALID_QUEUE_NAME = (
    "invalid queue name, max 64 characters consisting of alphanumeric characters and "
    "'-', '_', '#', '@', '/', ':' allowed"
)

_QUEUE_LEVEL = re.compile(r"[a-zA-Z0-9_:#/@-]{1,64}")
_RULE_NAME = re.compile(r"[_a-zA-Z][a-zA-Z0-9_]*")
_FILTER_USER = re.compile(r"[_a-zA-Z][a-zA-Z0-9:#/_.@-]*\$?")
_FILTER_GROUP = re.compile(r"[_a-zA-Z][a-zA-Z0-9:_.-]*")
_ACL_USER = re.compile(r"[_a-zA-Z][a-zA-Z0-9_.@:-]*\$?")
_ACL_GROUP = re.compile(r"[_a-zA-Z][a-zA-Z0-9_-]*")


def is_fully_qualified(name: str) -> bool:
    """Spec I1: `root` or a `root.` prefix, ignoring case (so `rootless` is not qualified)."""
    lowered = name.lower()
    return lowered == ROOT or lowered.startswith(ROOT + ".")


def replace_dots(name: str) -> str:
    """Spec I2: dots in user names and unqualified values must not create hierarchy levels."""
    return name.replace(".", "_dot_")


def is_valid_queue_level(name: str) -> bool:
    """Spec D2/I3: one level of a queue path (no dots, 1-64 characters)."""
    return _QUEUE_LEVEL.fullmatch(name) is not None


def is_valid_rule_name(name: str) -> bool:
    """Spec D5: rule names are identifiers."""
    return _RULE_NAME.fullmatch(name) is not None


def matches_filter_user(name: str) -> bool:
    """Spec J2 user charset (filters and identity checks)."""
    return _FILTER_USER.fullmatch(name) is not None


def matches_filter_group(name: str) -> bool:
    """Spec J2 group charset."""
    return _FILTER_GROUP.fullmatch(name) is not None


def matches_acl_user(name: str) -> bool:
    """Spec K4 ACL user charset; `:` is allowed for service accounts."""
    return _ACL_USER.fullmatch(name) is not None


def matches_acl_group(name: str) -> bool:
    """Spec K4 ACL group charset."""
    return _ACL_GROUP.fullmatch(name) is not None


def normalize_partition(name: str) -> str:
    """Spec A7: partition names are compared ignoring case and empty means `default`; the lower-case form
    is the canonical name."""
    return name.lower() or "default"


def parent_path(path: str) -> str | None:
    """The parent of a queue path, None for root."""
    head, dot, _ = path.rpartition(".")
    return head if dot else None
