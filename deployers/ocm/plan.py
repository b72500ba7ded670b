"""Which PlacementDecision pages to write, in which order, so no selected cluster ever leaves every page.

Pure: it compares the pages the API server holds for one Placement with the pages the decision publishes. A
reader lists the pages at any moment between two writes; a cluster that the new decision keeps selected must be
on some page at every such moment (upstream ocm#1346 is the reader that saw it missing). So the writes come in
three phases:

1. pages that gain clusters (new pages included) are written first, each keeping, for now, the clusters it loses
   that stay selected elsewhere;
2. then every page whose content still differs is written as published (it drops what it loses);
3. then pages no longer published are deleted.

Any state between two writes plans again to the same end by the same rule, so a write refused for a conflict is
retried by observing and planning again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

__all__ = ["CurrentPage", "Page", "Step", "StepKind", "plan_pages"]


@dataclass(frozen=True, slots=True)
class Page:
    """One page as the decision publishes it."""

    name: str
    labels: Mapping[str, str]
    clusters: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CurrentPage:
    """One page as the API server holds it; `owned` says whether it names the current Placement as its owner."""

    name: str
    labels: Mapping[str, str]
    clusters: tuple[str, ...]
    owned: bool


class StepKind(Enum):
    CREATE = "create"
    """Create the page (labels and owner, no clusters yet: the status subresource is written next)."""
    METADATA = "metadata"
    """Set the page's labels and owner reference."""
    STATUS = "status"
    """Write the page's clusters through the status subresource."""
    DELETE = "delete"


@dataclass(frozen=True, slots=True)
class Step:
    """One write; `page` carries the labels and, for STATUS, the clusters to write."""

    kind: StepKind
    page: Page


def _metadata_differs(current: CurrentPage, page: Page) -> bool:
    return not current.owned or any(current.labels.get(k) != v for k, v in page.labels.items())


def _writes(current: CurrentPage | None, page: Page, clusters: tuple[str, ...]) -> list[Step]:
    """The steps that make one page hold `clusters` with the published labels and owner."""
    target = Page(page.name, page.labels, clusters)
    if current is None:
        return [Step(StepKind.CREATE, target), *([Step(StepKind.STATUS, target)] if clusters else [])]
    steps = [Step(StepKind.METADATA, target)] if _metadata_differs(current, page) else []
    if current.clusters != clusters:
        steps.append(Step(StepKind.STATUS, target))
    return steps


def plan_pages(current: Mapping[str, CurrentPage], desired: Sequence[Page]) -> list[Step]:
    """The writes, in order, that turn the `current` pages (by name) into the `desired` ones."""
    selected = {cluster for page in desired for cluster in page.clusters}
    steps: list[Step] = []
    after_first: dict[str, tuple[str, ...]] = {}
    for page in desired:  # phase 1: pages that gain clusters, keeping what they lose but stays selected
        before = current.get(page.name)
        old = before.clusters if before is not None else ()
        if before is not None and set(page.clusters) <= set(old):
            continue
        kept = tuple(c for c in old if c in selected and c not in page.clusters)
        after_first[page.name] = page.clusters + kept
        steps.extend(_writes(before, page, page.clusters + kept))
    for page in desired:  # phase 2: every page as published
        before = current.get(page.name)
        if page.name in after_first:
            if after_first[page.name] != page.clusters:
                steps.append(Step(StepKind.STATUS, page))
            continue
        steps.extend(_writes(before, page, page.clusters))
    published = {page.name for page in desired}
    for name in sorted(current):  # phase 3: pages no longer published
        if name not in published:
            steps.append(Step(StepKind.DELETE, Page(name, current[name].labels, ())))
    return steps
