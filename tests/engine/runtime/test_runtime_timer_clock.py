"""Timers that fall due during a clock jump run at their own instants, in time order, and see the jump's end as the
clock (`EngineContext.clock`), which periodic timers schedule from."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import orjson
import pytest

from engine.cluster import ClusterPlacementEngine
from engine.core import EngineContext, Step
from engine.inventory import InventoryChange
from engine.runtime import InputRecord, Runtime
from topics.codec import DecodedEvent
from topics.names import TopicRole

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Timed:
    due: datetime | None


class TimerEngine:
    """Each subject's timer is armed once, from the `timerSeconds` annotation; firing records what the engine saw."""

    KIND: ClassVar[str] = "Placement"
    EVENTS: ClassVar[frozenset[str]] = frozenset({"placement.applied"})
    KEY_SHAPE: ClassVar[str] = ClusterPlacementEngine.KEY_SHAPE
    subject_of = staticmethod(ClusterPlacementEngine.subject_of)

    def __init__(self) -> None:
        self.fired: list[tuple[str, datetime, datetime | None]] = []

    def on_event(self, key: str, state: Timed | None, event: DecodedEvent, ctx: EngineContext) -> Step[Timed]:
        seconds = int(event.data.metadata.annotations["timerSeconds"])  # type: ignore[attr-defined]
        return Step(Timed(ctx.now + timedelta(seconds=seconds)))

    def on_deleted(self, key: str, state: Timed | None, ctx: EngineContext) -> Step[Timed]:
        return Step(None)

    def decide(self, key: str, state: Timed, ctx: EngineContext) -> Step[Timed]:
        return Step(state)

    def on_timer(self, key: str, state: Timed, ctx: EngineContext) -> Step[Timed]:
        self.fired.append((key.rsplit("/", 1)[1], ctx.now, ctx.clock))
        return Step(replace(state, due=None))

    def next_due(self, state: Timed) -> datetime | None:
        return state.due

    def affected_by(self, changes: Sequence[InventoryChange], ctx: EngineContext) -> Iterable[str]:
        return ()

    def on_config(self, key: str, state: Timed, ctx: EngineContext) -> Step[Timed]:
        return Step(state)

    def track(self, key: str, state: Timed | None) -> None:
        return None

    def dump_state(self, state: Timed) -> dict[str, Any]:
        return {"due": None if state.due is None else state.due.isoformat()}

    def load_state(self, raw: Mapping[str, Any]) -> Timed:
        return Timed(None if raw["due"] is None else datetime.fromisoformat(raw["due"]))


def _placement(offset: int, name: str, seconds: int) -> InputRecord:
    data = {"metadata": {"namespace": "ns", "name": name, "annotations": {"timerSeconds": str(seconds)}}}
    value = {"specversion": "1.0", "id": name, "source": "/t", "type": "placement.applied.v1", "data": data}
    key = f"Placement/ns/{name}".encode()
    return InputRecord(TopicRole.SUBMISSIONS, 0, offset, key, orjson.dumps(value), T0, "placement.submissions")


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("fire_at", "fired"),
    [
        ([5], []),
        # the clock reaches the timer exactly: it is not late, so no separate clock
        ([10], [("a", at(10), None)]),
        ([10, 20], [("a", at(10), None), ("b", at(20), None)]),
        # a jump: each timer at its own instant, in order, seeing where the clock went
        ([86_400 * 365], [("a", at(10), at(86_400 * 365)), ("b", at(20), at(86_400 * 365))]),
        ([15, 3_600], [("a", at(10), at(15)), ("b", at(20), at(3_600))]),
    ],
)
def test_late_timers_run_at_their_instant_and_see_the_clock(
    fire_at: list[float], fired: list[tuple[str, datetime, datetime | None]]
) -> None:
    engine = TimerEngine()
    runtime = Runtime([engine])
    runtime.process([_placement(0, "b", 20), _placement(1, "a", 10)], T0)
    for seconds in fire_at:
        runtime.fire_timers(at(seconds))
    assert engine.fired == fired
