"""Build the `placement.decided` event (spec K1–K6) from a published decision."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from engine.cluster.pipeline.evaluate import Evaluation
from engine.cluster.pipeline.groups import Page
from engine.cluster.tracking.state import Published
from topics.interning import ByIdentity, Interning
from topics.placement import (
    ClusterDecision,
    DecisionEntries,
    DecisionGroupStatus,
    PlacementDecided,
    PlacementDecisionPage,
    PrioritizerExplain,
    WarningInfo,
)

__all__ = [
    "DECISION_API_VERSION",
    "GROUP_INDEX_LABEL",
    "GROUP_NAME_LABEL",
    "PLACEMENT_LABEL",
    "EventPools",
    "decided_event",
    "deleted_event",
    "group_statuses",
    "page_objects",
]

DECISION_API_VERSION = "cluster.open-cluster-management.io/v1beta1"
PLACEMENT_LABEL = "cluster.open-cluster-management.io/placement"
GROUP_NAME_LABEL = "cluster.open-cluster-management.io/decision-group-name"
GROUP_INDEX_LABEL = "cluster.open-cluster-management.io/decision-group-index"


def page_objects(
    namespace: str, placement: str, pages: Sequence[Page], interning: Interning
) -> list[PlacementDecisionPage]:
    """PlacementDecision objects with the upstream names and labels (spec I2–I4)."""
    pools = interning.pools(EventPools)
    out: list[PlacementDecisionPage] = []
    for page in pages:
        decisions = pools.lists.get((page.clusters,), pools.entries)
        out.append(
            {
                "apiVersion": DECISION_API_VERSION,
                "kind": "PlacementDecision",
                "metadata": {
                    "name": page.name,
                    "namespace": namespace,
                    "labels": {
                        PLACEMENT_LABEL: placement,
                        GROUP_NAME_LABEL: page.group_name,
                        GROUP_INDEX_LABEL: str(page.group_index),
                    },
                },
                "status": {"decisions": decisions},
            }
        )
    return out


_DECISIONS_LIMIT = 1 << 16  # a module constant: compiled, a class constant of a dict subclass is lost


class _Decisions(dict[str, ClusterDecision]):
    """Page entries, one shared object per cluster name: the entries are only serialised, never changed, and a
    cold start would otherwise build one per selected cluster (900,000 in the benchmark), a twentieth of it.
    A dict with `__missing__` because every event looks up hundreds of names, a plain lookup in C each."""

    def __missing__(self, cluster: str) -> ClusterDecision:
        if len(self) >= _DECISIONS_LIMIT:  # names of clusters long gone must not pile up
            self.clear()
        entry: ClusterDecision = {"clusterName": cluster, "reason": ""}
        self[cluster] = entry
        return entry


class EventPools:
    """A runtime's page entries (`Interning.pools`)."""

    __slots__ = ("decisions", "lists")

    def __init__(self) -> None:
        self.decisions = _Decisions()
        self.lists: ByIdentity[DecisionEntries] = ByIdentity()
        """Page entries by a page's cluster tuple: published pages are shared (`Published`) and the placements
        repeating a spec mostly publish the same ones, hundreds of clusters each. The lists are only serialised,
        never changed, and each is serialised once (`DecisionEntries`)."""

    def entries(self, clusters: tuple[str, ...]) -> DecisionEntries:
        """A page's entries, of the shared entry per cluster name."""
        return DecisionEntries(map(self.decisions.__getitem__, clusters))


def group_statuses(pages: Sequence[Page]) -> list[DecisionGroupStatus]:
    """`status.decisionGroups` (J5); every group has at least one page, so pages are enough."""
    groups: dict[int, DecisionGroupStatus] = {}
    for page in pages:
        group = groups.get(page.group_index)
        if group is None:
            group = groups[page.group_index] = {
                "decisionGroupIndex": page.group_index,
                "decisionGroupName": page.group_name,
                "decisions": [],
                "clusterCount": 0,
            }
        group["decisions"].append(page.name)
        group["clusterCount"] += len(page.clusters)
    return list(groups.values())


def decided_event(
    namespace: str, name: str, published: Published, evaluation: Evaluation, interning: Interning, *, explain: bool
) -> PlacementDecided:
    """The whole decision as one event: the selected clusters' scores (K3); the passing clusters' scores and the
    other explain data only when requested (K4)."""
    warning: WarningInfo | None = None
    if published.warning is not None:
        warning = {"plugin": published.warning[0], "message": published.warning[1]}
    passing_scores: dict[str, int] | None = None
    prioritizers: list[PrioritizerExplain] | None = None
    filtered_by: dict[str, str] | None = None
    if explain:
        passing_scores = evaluation.passing_scores
        prioritizers = [{"name": p.name, "weight": p.weight, "scores": dict(p.scores)} for p in evaluation.prioritizers]
        filtered_by = dict(evaluation.filtered_by)
    # Built from trusted values only: skip validation, which would dominate the cost for large decisions.
    return PlacementDecided.model_construct(
        namespace=namespace,
        name=name,
        generation=published.generation,
        evaluation_time=published.evaluation_time,
        placement_decisions=page_objects(namespace, name, published.pages, interning),
        decision_groups=group_statuses(published.pages),
        number_of_selected_clusters=published.selected,
        conditions=list(published.conditions),
        scores=evaluation.scores,  # the selected clusters only (K3); built for this event
        warning=warning,
        deleted=False,
        passing_scores=passing_scores,
        prioritizers=prioritizers,
        filtered_by=filtered_by,
    )


def deleted_event(namespace: str, name: str, generation: int, at: datetime) -> PlacementDecided:
    """The final event of a deleted placement (K5): no pages, no groups."""
    return PlacementDecided(namespace=namespace, name=name, generation=generation, evaluation_time=at, deleted=True)
