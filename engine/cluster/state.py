"""Per-placement state: the Placement, its last published decision and its next timer instant.

Only what change detection (spec K2), Steady/NoSelectIfNew (D10), conditions (J4) and timers (L6, L8) need is
kept; scores are recomputed, so the changelog entry stays small.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import chain
from typing import Any

from pydantic import ValidationError

from engine.cluster.fleet import Fleet, Ids
from engine.cluster.groups import Page
from engine.errors import InvalidStateError
from topics.codec import dump_model
from topics.k8s import Condition
from topics.placement import Placement

__all__ = ["PlacementState", "Published", "dump_placement_state", "load_placement_state"]


@dataclass(frozen=True, slots=True)
class Published:
    """The last published decision of a placement."""

    pages: tuple[Page, ...]
    selected: int
    conditions: tuple[Condition, ...]
    warning: tuple[str, str] | None
    generation: int
    evaluation_time: datetime
    decided: frozenset[str] = field(init=False, compare=False, repr=False)
    _ids: tuple[int, Ids] | None = field(default=None, init=False, compare=False, repr=False)
    """(fleet serial, `decided` as that fleet's ids): Balance and Steady read them in every evaluation."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "decided", frozenset(chain.from_iterable(page.clusters for page in self.pages)))

    def clusters(self) -> frozenset[str]:
        """Every decided cluster over all pages."""
        return self.decided

    def decided_ids(self, fleet: Fleet) -> Ids:
        """`decided` as `fleet`'s ids, converted once per fleet (a decision holds hundreds of clusters)."""
        memo = self._ids
        if memo is not None and memo[0] == fleet.serial:
            return memo[1]
        ids = fleet.ids(self.decided)
        self.remember_ids(fleet, ids)
        return ids

    def remember_ids(self, fleet: Fleet, ids: Ids) -> None:
        """Keep `ids` (the decided clusters as `fleet`'s ids, ascending) from the evaluation that decided them."""
        object.__setattr__(self, "_ids", (fleet.serial, ids))

    def same_answer(
        self, pages: Sequence[Page], selected: int, warning: tuple[str, str] | None, conditions: Sequence[Condition]
    ) -> bool:
        """Whether a new evaluation's pages, status and warning equal these (spec K2); times and generation do
        not count. Compared before a new `Published` is built, as most re-decisions change nothing."""
        return (
            self.pages == tuple(pages)
            and self.selected == selected
            and self.warning == warning
            and [(c.type, c.status, c.reason, c.message) for c in self.conditions]
            == [(c.type, c.status, c.reason, c.message) for c in conditions]
        )


@dataclass(frozen=True, slots=True)
class PlacementState:
    """State of one `Placement/<namespace>/<name>` subject."""

    placement: Placement
    published: Published | None = None
    due: datetime | None = None
    """The next instant `on_timer` is needed (L6 timer or L8 resync), None for none."""

    def current(self) -> frozenset[str]:
        """The clusters of the last published decision (spec D10)."""
        return self.published.clusters() if self.published is not None else frozenset()


def _time(raw: Any) -> datetime | None:
    return None if raw is None else datetime.fromisoformat(str(raw).replace("Z", "+00:00"))


def dump_placement_state(state: PlacementState) -> dict[str, Any]:
    """JSON form for the compacted changelog."""
    published = state.published
    return {
        "placement": dump_model(state.placement),
        "published": None
        if published is None
        else {
            "pages": [(p.name, p.group_name, p.group_index, p.clusters) for p in published.pages],
            "selected": published.selected,
            "conditions": [dump_model(c) for c in published.conditions],
            "warning": None if published.warning is None else list(published.warning),
            "generation": published.generation,
            "evaluationTime": published.evaluation_time.isoformat(),
        },
        "due": None if state.due is None else state.due.isoformat(),
    }


def load_placement_state(raw: Mapping[str, Any]) -> PlacementState:
    """Inverse of dump_placement_state; InvalidStateError when the entry cannot be read."""
    try:
        placement = Placement.model_validate(raw["placement"])
        body = raw.get("published")
        published = None
        if body is not None:
            warning = body.get("warning")
            evaluated = _time(body["evaluationTime"])
            assert evaluated is not None
            published = Published(
                pages=tuple(Page(str(n), str(g), int(i), tuple(str(c) for c in cs)) for n, g, i, cs in body["pages"]),
                selected=int(body["selected"]),
                conditions=tuple(Condition.model_validate(c) for c in body["conditions"]),
                warning=None if warning is None else (str(warning[0]), str(warning[1])),
                generation=int(body.get("generation", 0)),
                evaluation_time=evaluated,
            )
        return PlacementState(placement, published, _time(raw.get("due")))
    except (KeyError, TypeError, ValueError, AssertionError, ValidationError) as exc:
        raise InvalidStateError(f"unreadable cluster placement state: {exc}") from exc
