"""Decision groups (spec H1–H8) and PlacementDecision pages (spec I1–I5)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import filterfalse

from engine.cluster.fleet.views import InventoryView
from engine.cluster.matching.selectors import EVERYTHING
from engine.cluster.pipeline.compiled import CompiledPlacement
from engine.cluster.pipeline.status import SUCCESS, PluginStatus
from topics.placement import GroupStrategy

__all__ = ["PAGE_SIZE", "Group", "Page", "build_groups", "group_length", "paginate"]

PAGE_SIZE = 100
"""At most this many clusters per PlacementDecision (I1)."""

# The decimal forms Go's ParseFloat accepts (plus inf/infinity/nan); Python's float() is laxer (spaces, `_`).
_GO_FLOAT = re.compile(r"^[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Group:
    """One decision group: its clusters sorted by name."""

    name: str
    index: int
    clusters: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Page:
    """One PlacementDecision: name, group and at most PAGE_SIZE cluster names."""

    name: str
    group_name: str
    group_index: int
    clusters: tuple[str, ...]


def _percent(prefix: str) -> float | None:
    return float(prefix) if _GO_FLOAT.match(prefix) else None


@lru_cache(maxsize=4096)
def group_length(raw: int | str, total: int) -> tuple[int, PluginStatus]:
    """Clusters per group (H1, H2): integer, digits-only string, or a percentage of `total`; kept per input, as
    every evaluation asks (mostly of "100%" and a few hundred totals)."""
    length: int
    if isinstance(raw, int):
        length = raw
    elif raw.isdigit() and raw.isascii():
        length = int(raw)
    elif raw.endswith("%") and (percent := _percent(raw[:-1])) is not None:
        value = math.ceil(percent / 100 * total) if math.isfinite(percent) else None
        length = total if value is None or abs(value) > 2**63 - 1 else int(value)
    else:
        return 0, PluginStatus.misconfigured("", f"{raw} invalid type: string is not a percentage")
    if length <= 0 or length > total:
        length = total
    return length, SUCCESS


def _chunks(names: Sequence[str], size: int) -> list[tuple[str, ...]]:
    if size <= 0:
        return [tuple(names)] if names else []
    return [tuple(names[i : i + size]) for i in range(0, len(names), size)]


def build_groups(
    strategy: GroupStrategy, compiled: CompiledPlacement, selected: list[str], view: InventoryView
) -> tuple[list[Group], PluginStatus]:
    """Predefined groups first (first match wins), then the `""` remainder; one empty group when none.

    `selected` is in name order, so every group is cut from it without sorting again (H5).
    """
    length, status = group_length(strategy.clusters_per_decision_group, len(selected))
    if status.failed:
        return [], status
    remaining = selected
    groups: list[Group] = []
    index = 0
    for group, selector in zip(strategy.decision_groups, compiled.groups, strict=False):
        pool = set(remaining)
        if selector.labels != EVERYTHING:
            pool &= view.selected("label", selector.labels)
        if selector.claims != EVERYTHING:
            pool &= view.selected("claim", selector.claims)
        if pool:
            for chunk in _chunks(list(filter(pool.__contains__, remaining)), length):
                groups.append(Group(group.group_name, index, chunk))
                index += 1
            remaining = list(filterfalse(pool.__contains__, remaining))
    if compiled.group_error is not None:
        return groups, PluginStatus.misconfigured("", compiled.group_error)
    for chunk in _chunks(remaining, length):
        groups.append(Group("", index, chunk))
        index += 1
    if not groups:
        groups.append(Group("", 0, ()))
    return groups, SUCCESS


def paginate(placement_name: str, groups: list[Group]) -> list[Page]:
    """Split each group into pages of at most PAGE_SIZE; an empty group still gets one page (I1, I2)."""
    pages: list[Page] = []
    for group in groups:
        chunks = _chunks(group.clusters, PAGE_SIZE) or [()]
        for chunk in chunks:
            pages.append(Page(f"{placement_name}-decision-{len(pages) + 1}", group.name, group.index, chunk))
    return pages
