"""Per-placement state: the Placement, its last published decision and its next timer instant.

Only what change detection (spec K2), Steady/NoSelectIfNew (D10), conditions (J4) and timers (L6, L8) need is
kept; scores are recomputed, so the changelog entry stays small.

The changelog keeps a placement as two entries: the Placement as the subject's own entry and the decision
(published decision and timer) as the `decision` part. A re-decision, by far the most frequent change, then
writes only the decision. Every write of the Placement is followed by a decision entry in the same
transaction, so the last decision entry of a placement always comes after its last Placement entry: a
decision read before any Placement is an older one that a later entry replaces, and restore skips it.

A decision entry lists its pages under `packedPages` (see `_packed`): a page's clusters as the prefix they
share and the rest of each name, comma-separated, about a third of the bytes of the JSON list that entries
written before it hold under `pages` (still read).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import InitVar, dataclass, field, replace
from datetime import datetime
from functools import lru_cache
from itertools import chain
from typing import Any

from engine.cluster.fleet.ids import Fleet, Ids, KnownIds
from engine.cluster.pipeline.groups import Page
from engine.core import StatePart
from engine.errors import InvalidStateError, UnreadableState
from topics.base import validated_once
from topics.codec import dump_model
from topics.interning import ByIdentity, Interner, Interning, SharedByKey
from topics.k8s import Condition
from topics.placement import Placement

__all__ = [
    "DECISION_PART",
    "PlacementState",
    "Published",
    "StatePools",
    "dump_placement_state",
    "load_placement_part",
    "load_placement_state",
    "peer_decided",
    "placement_state_changes",
]

DECISION_PART = "decision"
"""The changelog part holding a placement's published decision and timer."""


@dataclass(frozen=True, slots=True)
class Published:
    """The last published decision of a placement; built with a runtime's `interning`, what it keeps of its pages
    is shared with every placement of that runtime that decided the same."""

    pages: tuple[Page, ...]
    selected: int
    conditions: tuple[Condition, ...]
    warning: tuple[str, str] | None
    generation: int
    evaluation_time: datetime
    decided: frozenset[str] = field(init=False, compare=False, repr=False)
    """Every decided cluster over all pages."""
    _ids: KnownIds | None = field(default=None, init=False, compare=False, repr=False)
    """(fleet serial, `decided` as that fleet's ids): Balance and Steady read them in every evaluation."""
    interning: InitVar[Interning | None] = None

    def __post_init__(self, interning: Interning | None) -> None:
        if interning is None:  # built outside a runtime: nothing to share with
            object.__setattr__(self, "decided", frozenset(chain.from_iterable(p.clusters for p in self.pages)))
            return
        # what a placement keeps of its decision is shared with every placement that decided the same (only
        # what is published is kept: an evaluation that changes nothing builds no Published)
        pools = interning.pools(StatePools)
        pages = tuple(pools.page(page) for page in self.pages)
        object.__setattr__(self, "pages", pages)
        object.__setattr__(self, "decided", pools.decided_of(pages))

    def decided_ids(self, fleet: Fleet) -> Ids:
        """`decided` as `fleet`'s ids, converted once per fleet (a decision holds hundreds of clusters)."""
        memo = self._ids
        if memo is not None and memo[0] == fleet.serial:
            return memo[1]
        ids = fleet.ids(self.decided)
        self.remember_ids(fleet, ids)
        return ids

    def known_ids(self) -> KnownIds | None:
        """`decided` as the ids of the fleet with that serial, if converted or remembered yet."""
        return self._ids

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
        return self.published.decided if self.published is not None else frozenset()


def _time(raw: Any) -> datetime | None:
    return None if raw is None else _parsed_time(str(raw))


@lru_cache(maxsize=4096)
def _parsed_time(text: str) -> datetime:
    """A restore reads the same few instants thousands of times (every placement of a batch shares one)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def dump_placement_state(state: PlacementState, interning: Interning) -> dict[str, Any]:
    """The whole state as JSON: the Placement entry and the decision entry in one object."""
    pools = interning.pools(StatePools)
    return {"placement": _dump_placement(state.placement, pools), **_dump_decision(state, pools)}


def _dump_decision(state: PlacementState, pools: StatePools) -> dict[str, Any]:
    published = state.published
    return {
        "published": None
        if published is None
        else {
            "packedPages": [
                (p.name, p.group_name, p.group_index, *pools.packed.get((p.clusters,), _packed))
                for p in published.pages
            ],
            "selected": published.selected,
            "conditions": [pools.dumped.get((c,), dump_model) for c in published.conditions],
            "warning": None if published.warning is None else list(published.warning),
            "generation": published.generation,
            "evaluationTime": published.evaluation_time.isoformat(),
        },
        "due": None if state.due is None else state.due.isoformat(),
    }


_SEPARATOR = ","


class StatePools:
    """A runtime's shared parts of placement states and their JSON (`Interning.pools`)."""

    __slots__ = (
        "clusters",
        "decided",
        "decided_by_pages",
        "dumped",
        "loaded_conditions",
        "packed",
        "specs",
        "unpacked",
    )

    def __init__(self) -> None:
        self.loaded_conditions: SharedByKey[Condition] = SharedByKey()
        """Conditions read back from the changelog, by their JSON."""
        self.clusters: Interner[tuple[str, ...]] = Interner()
        """A published page's clusters: placements with the same predicates and sets publish the same pages."""
        self.decided: Interner[frozenset[str]] = Interner()
        """A published decision's clusters over all pages, shared for the same reason."""
        self.decided_by_pages: ByIdentity[frozenset[str]] = ByIdentity(1 << 15)
        """A decision's clusters by its pages' (shared) cluster tuples: placements repeating a spec mostly publish
        the same pages, and their clusters need no second set (a restore of 100,000 Placements reads 21,600
        distinct decisions: a smaller memo, cleared when full, would make most of them again)."""
        self.packed: ByIdentity[tuple[str, str | tuple[str, ...]]] = ByIdentity(1 << 13)
        """Packed page clusters by their (shared) tuple: placements repeating a spec mostly publish the same pages
        (the benchmark's cold start: 5,100 distinct pages of 10,800; a smaller memo, cleared when full, packed
        each twice)."""
        self.dumped: ByIdentity[dict[str, Any]] = ByIdentity(256)
        """Published conditions as JSON: decisions share a few condition objects (`ConditionPools`), and every
        decision entry writes them. The JSON is only serialised, never changed."""
        self.specs: ByIdentity[dict[str, Any]] = ByIdentity(256)
        """Specs as JSON: Placements share equal specs (topics/placement.py), and a cold start writes each one."""
        self.unpacked = lru_cache(maxsize=1 << 15)(self._unpacked)
        """A restore reads the same pages many times: placements repeating a spec mostly publish the same ones
        (the benchmark's 20,000 Placements hold 36,500 pages, 8,700 of them distinct, which a memo of 1,024
        unpacked 19,000 times; 100,000 hold 21,100 distinct pages). The tuple returned is the pooled one, so a
        Published built of it is shared at once. What the memo keeps alive is bounded by its size (about 11 MiB
        of peak memory at 100,000 Placements with `decided_by_pages`)."""

    def _unpacked(self, prefix: str, rest: str) -> tuple[str, ...]:
        whole = prefix + rest.replace(_SEPARATOR, _SEPARATOR + prefix) if prefix else rest
        return self.clusters(tuple(map(sys.intern, whole.split(_SEPARATOR))))

    def page(self, page: Page) -> Page:
        """The page with the shared tuple of its clusters."""
        clusters = self.clusters(page.clusters)
        return page if clusters is page.clusters else Page(page.name, page.group_name, page.group_index, clusters)

    def decided_of(self, pages: Sequence[Page]) -> frozenset[str]:
        """The shared set of the pages' clusters."""
        return self.decided_by_pages.get(tuple(page.clusters for page in pages), self._decided_set)

    def _decided_set(self, *parts: tuple[str, ...]) -> frozenset[str]:
        return self.decided(frozenset(chain.from_iterable(parts)))


def _packed(clusters: tuple[str, ...]) -> tuple[str, str | tuple[str, ...]]:
    """(prefix, rest): the prefix every name shares and the rest of each name joined by commas, or (`""`, the
    names) when there is none or a name holds a comma, which a join cannot tell apart. String methods only (no
    loop over the names): a cold start packs thousands of distinct pages."""
    if not clusters:
        return "", clusters
    joined = _SEPARATOR.join(clusters)
    if joined.count(_SEPARATOR) != len(clusters) - 1:
        return "", clusters
    # character by character, as wanted here (names, not paths); of the least and greatest name, so of all
    prefix = os.path.commonprefix(clusters)  # noqa: RUF071
    rest = joined.replace(_SEPARATOR + prefix, _SEPARATOR)  # every comma is a separator followed by a name
    return prefix, rest[len(prefix) :]


def _unpack(prefix: Any, rest: Any, pools: StatePools) -> tuple[str, ...]:
    """Inverse of `_packed`; TypeError when the entry holds anything else."""
    if isinstance(prefix, str) and isinstance(rest, str):
        return pools.unpacked(prefix, rest)
    if not isinstance(prefix, str) or not isinstance(rest, list) or not all(isinstance(name, str) for name in rest):
        raise TypeError(f"packed page clusters must be a string and a string or a list of them, not {rest!r}")
    return tuple([sys.intern(prefix + name) for name in rest])


def _dump_placement(placement: Placement, pools: StatePools) -> dict[str, Any]:
    """`dump_model(placement)` with the spec's JSON made once per spec object."""
    return dump_model(placement, {"spec": pools.specs.get((placement.spec,), dump_model)})


def placement_state_changes(
    old: PlacementState | None, new: PlacementState | None, interning: Interning
) -> list[StatePart]:
    """The changelog entries that differ between the state last written and `new` (see the module docstring)."""
    if new is None:
        return [("", None), (DECISION_PART, None)]
    pools = interning.pools(StatePools)
    parts: list[StatePart] = []
    if old is None or old.placement is not new.placement:
        parts.append(("", {"placement": _dump_placement(new.placement, pools)}))
    if parts or old is None or old.published is not new.published or old.due != new.due:
        parts.append((DECISION_PART, _dump_decision(new, pools)))
    return parts


def load_placement_part(
    state: PlacementState | None, part: str, raw: Mapping[str, Any] | None, interning: Interning
) -> PlacementState | None:
    """`state` with one changelog entry of `placement_state_changes` applied (an entry holding the whole state, as
    `dump_placement_state` writes it, is read too); InvalidStateError when the entry cannot be read."""
    if part not in ("", DECISION_PART):
        raise InvalidStateError(f"unknown cluster placement state part {part!r}")
    with _readable:
        if part == DECISION_PART:
            if state is None:  # a decision before any Placement is an older one, replaced by a later entry
                return None
            published, due = (None, None) if raw is None else _load_decision(raw, interning)
            return replace(state, published=published, due=due)
        if raw is None:
            return None
        if "published" in raw:
            return _load_whole(raw, interning)
        placement = _load_placement(raw, interning)
        return PlacementState(placement) if state is None else replace(state, placement=placement)


def peer_decided(part: str, raw: Mapping[str, Any] | None, interning: Interning) -> frozenset[str] | None:
    """The clusters a placement owned elsewhere has decided, by one of its changelog entries: empty when the
    entry removes the placement or its decision, None when the entry says nothing of the decision (a Placement
    entry, which a decision entry always follows). InvalidStateError when the entry cannot be read."""
    if part not in ("", DECISION_PART):
        raise InvalidStateError(f"unknown cluster placement state part {part!r}")
    if raw is None:
        return frozenset()
    if not part and "published" not in raw:
        return None
    with _readable:
        body = raw["published"]
        pools = interning.pools(StatePools)
        return frozenset() if body is None else pools.decided_of(_body_pages(body, pools))


def load_placement_state(raw: Mapping[str, Any], interning: Interning) -> PlacementState:
    """Inverse of dump_placement_state; InvalidStateError when the entry cannot be read."""
    with _readable:
        return _load_whole(raw, interning)


_readable = UnreadableState(
    "unreadable cluster placement state",
    (AttributeError, KeyError, TypeError, ValueError, AssertionError),  # pydantic's errors are ValueErrors
)
"""Any error reading an entry becomes InvalidStateError, so restore names the entry and goes on."""


def _load_whole(raw: Mapping[str, Any], interning: Interning) -> PlacementState:
    published, due = _load_decision(raw, interning)
    return PlacementState(_load_placement(raw, interning), published, due)


def _load_placement(raw: Mapping[str, Any], interning: Interning) -> Placement:
    return Placement.model_validate(raw["placement"], context=interning)


def _load_decision(raw: Mapping[str, Any], interning: Interning) -> tuple[Published | None, datetime | None]:
    body = raw.get("published")
    published = None
    if body is not None:
        pools = interning.pools(StatePools)
        warning = body.get("warning")
        evaluated = _time(body["evaluationTime"])
        assert evaluated is not None
        published = Published(
            pages=_body_pages(body, pools),
            selected=int(body["selected"]),
            conditions=tuple(_load_condition(c, pools) for c in body["conditions"]),
            warning=None if warning is None else (str(warning[0]), str(warning[1])),
            generation=int(body.get("generation", 0)),
            evaluation_time=evaluated,
            interning=interning,
        )
    return published, _time(raw.get("due"))


def _load_condition(raw: Any, pools: StatePools) -> Condition:
    """A condition entry, validated once per distinct entry (placements mostly hold the same few). Not also
    put in the pool of computed conditions (`ConditionPools`): see topics/interning.py."""
    return validated_once(pools.loaded_conditions, raw, Condition.model_validate)


def _body_pages(body: Mapping[str, Any], pools: StatePools) -> tuple[Page, ...]:
    """A decision's pages, packed (`packedPages`) or as entries before packing wrote them (`pages`)."""
    packed = body.get("packedPages")
    if packed is None:
        return _load_pages(body["pages"])
    return tuple(Page(str(n), str(g), int(i), _unpack(prefix, rest, pools)) for n, g, i, prefix, rest in packed)


def _load_pages(raw: Sequence[Any]) -> tuple[Page, ...]:
    # names read from JSON are new strings per occurrence: hundreds per decision, so share them
    return tuple(Page(str(n), str(g), int(i), tuple(map(sys.intern, cs))) for n, g, i, cs in raw)
