"""An instance's status as `GET /status` answers it, for `placement-stream describe`: its tasks, restores, lag, last
commit and decision times and dead letters by reason, read from what the processor already keeps."""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime
from typing import Any

from prometheus_client import Counter, Gauge

from streams.kafka.membership import MemberDirectory
from streams.kafka.restores import RestoreProgress
from streams.metrics import Metrics
from streams.version import VERSION

__all__ = ["status_document"]


def _instant(at: float | None) -> str | None:
    return None if at is None else datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")


def _samples(metric: Counter | Gauge, name: str) -> list[tuple[dict[str, str], float]]:
    return [(s.labels, s.value) for family in metric.collect() for s in family.samples if s.name == name]


def status_document(
    *,
    url: str | None,
    ready: bool,
    owned: Collection[int],
    assigned: Collection[int],
    restores: RestoreProgress | None,
    directory: MemberDirectory,
    metrics: Metrics,
    subjects: int,
) -> dict[str, Any]:
    """The /status document; `assigned` are the tasks the group gave this instance, `owned` those restored."""
    lag = [
        {"topic": labels["topic"], "task": int(labels["partition"]), "records": int(value)}
        for labels, value in _samples(metrics.lag, "placement_consumer_lag")
    ]
    dead = _samples(metrics.dead_letters, "placement_dead_letters_total")
    by_reason: dict[str, int] = {}
    for labels, value in dead:
        by_reason[labels["stage"]] = by_reason.get(labels["stage"], 0) + int(value)
    return {
        "url": url,
        "version": VERSION,
        "ready": ready,
        "tasks": sorted(owned),
        "restoring": sorted(set(assigned) - set(owned)),
        "restores": {
            "running": [r.as_json() for _, r in sorted((restores.running if restores else {}).items())],
            "last": [r.as_json() for _, r in sorted((restores.last if restores else {}).items())],
        },
        "lag": sorted(lag, key=lambda row: (row["task"], row["topic"])),
        "subjects": subjects,
        "lastCommitAt": _instant(metrics.last_commit_at),
        "lastDecisionAt": _instant(metrics.last_decision_at),
        "deadLetters": dict(sorted(by_reason.items())),
        "deadLettersByTopic": [
            {"topic": labels["topic"], "stage": labels["stage"], "count": int(value)} for labels, value in dead
        ],
        "group": {"generation": directory.generation, "membersKnown": directory.known},
    }
