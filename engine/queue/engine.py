"""The queue placement engine: one subject `Application/<partition>` per YuniKorn partition (spec A5, A8, B)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any, ClassVar

from engine.core import Emit, EngineContext, StatePart, Step, WhatIf
from engine.errors import InvalidStateError
from engine.queue.config import PartitionConfig, QueueConfig
from engine.queue.names import normalize_partition
from engine.queue.persistent import changed_items, with_item, without_item
from engine.queue.placement import Placed, PlacementOutcome, Rejected, Submission, place_application
from engine.queue.state import (
    PartitionState,
    dump_application,
    dump_partition_meta,
    dump_partition_state,
    load_application,
    load_partition_meta,
    load_partition_state,
)
from engine.queue.tree import complete_application, reconcile
from topics.codec import DecodedEvent
from topics.queue import ApplicationCompleted, ApplicationPlaced, ApplicationRejected, ApplicationSubmitted

__all__ = ["QueueEngine", "apply_config", "complete", "explain_partition", "partition_of_key", "place"]

_LOG = logging.getLogger(__name__)
_SUBMITTED = "application.submitted"
_APP_PART = "apps/"
"""Changelog part prefix of one application's entry; the partition's queue records are the subject's own."""
_COMPLETED = "application.completed"


def partition_of_key(key: str) -> str:
    """The canonical partition name in a subject key `Application/<partition>`."""
    return normalize_partition(key.partition("/")[2])


def _partition_config(config: Any, name: str) -> PartitionConfig | None:
    return config.partition(name) if isinstance(config, QueueConfig) else None


def _differ(before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    """Whether two queue mappings differ; a placement into an existing queue keeps the same mapping objects,
    and comparing them entry by entry grew with every dynamic queue."""
    return before is not after and before != after


def _keep(state: PartitionState) -> PartitionState | None:
    """An empty partition state is forgotten rather than stored."""
    return state if state.applications or state.queues else None


def place(
    config: QueueConfig | None, partition: str, state: PartitionState | None, submission: Submission
) -> tuple[PartitionState | None, PlacementOutcome]:
    """Decide one submission without events: the state afterwards and the outcome (A8, B2, B3, G)."""
    partition_config = _partition_config(config, partition)
    if partition_config is None:
        name = normalize_partition(partition)
        reason = f"Failed to add application {submission.application_id} to partition {name}, partition doesn't exist"
        return state, Rejected(reason)
    new_state, outcome = place_application(partition_config, state or PartitionState(), submission)
    return (_keep(new_state) if isinstance(outcome, Placed) else state), outcome


def complete(
    config: QueueConfig | None, partition: str, state: PartitionState | None, application_id: str
) -> tuple[PartitionState | None, tuple[str, ...] | None]:
    """Apply one completion (B4, M): the state afterwards and the deleted queues, None when ignored."""
    partition_config = _partition_config(config, partition)
    if partition_config is None or state is None:
        return state, None
    done = complete_application(partition_config, state, application_id)
    if done is None:
        _LOG.debug("completion of unknown application %s in partition %s ignored", application_id, partition)
        return state, None
    new_state, removed = done
    return _keep(new_state), removed


def apply_config(config: QueueConfig, partition: str, state: PartitionState | None) -> PartitionState | None:
    """Adapt a partition's state to a newly active configuration (A5, N); None when the partition is gone."""
    partition_config = config.partition(partition)
    if partition_config is None:
        return None
    if state is None:
        return None
    new_state, removed = reconcile(partition_config, state)
    if removed:
        _LOG.info("partition %s: removed empty draining queues %s", partition_config.name, ", ".join(removed))
    return _keep(new_state)


def explain_partition(key: str, state: PartitionState, config: Any) -> dict[str, Any]:
    """The explain document of one partition: the active configuration's rule chain (in the order a submission
    tries it), the queues the state adds to the file (dynamic, or draining after a reload dropped them), and every
    running application with its queue and the rule that placed it, also grouped by queue."""
    partition = partition_of_key(key)
    partition_config = _partition_config(config, partition)
    meta = dump_partition_meta(state)
    by_queue: dict[str, list[str]] = {}
    applications: dict[str, dict[str, Any]] = {}
    for app_id, app in sorted(state.applications.items()):
        applications[app_id] = {"queue": app.queue, "rule": app.rule, "created": app.created}
        by_queue.setdefault(app.queue, []).append(app_id)
    configuration: dict[str, Any] | None = None
    if isinstance(config, QueueConfig):
        configuration = {
            "path": config.path,
            "sha256": config.sha256,
            "partitionConfigured": partition_config is not None,
            "rules": [] if partition_config is None else [rule.describe() for rule in partition_config.rules],
        }
    return {
        "subject": key,
        "partition": partition,
        "configuration": configuration,
        "dynamicQueues": meta["queues"],
        "configuredInUse": meta["configuredInUse"],
        "applications": applications,
        "queues": dict(sorted(by_queue.items())),
    }


class QueueEngine:
    """YuniKorn queue placement as a subject engine; every submission is decided at once."""

    KIND: ClassVar[str] = "Application"
    EVENTS: ClassVar[frozenset[str]] = frozenset({_SUBMITTED, _COMPLETED})
    KEY_SHAPE: ClassVar[str] = "Application/<partition>"

    @staticmethod
    def subject_of(event: DecodedEvent) -> str | None:
        """None: the partition's spelling is normalised when the submission is applied, not by routing."""
        return None

    def __init__(self, config: QueueConfig | None = None) -> None:
        self._config = config
        """The active queue configuration; None: the service has none, and every application is rejected."""

    @property
    def config(self) -> QueueConfig | None:
        """The active configuration, for operators' views (explain, tests)."""
        return self._config

    def configure(self, config: object) -> None:
        """Make a configuration active (subjects follow through `on_config`); None: no configuration."""
        if config is not None and not isinstance(config, QueueConfig):
            raise TypeError(f"the queue engine is configured with a QueueConfig, not {type(config).__name__}")
        self._config = config

    def on_event(
        self, key: str, state: PartitionState | None, event: DecodedEvent, ctx: EngineContext
    ) -> Step[PartitionState]:
        """Place a submission (one result event each) or apply a completion (no event)."""
        data = event.data
        key_partition = partition_of_key(key)
        if isinstance(data, ApplicationSubmitted):
            return self._submitted(key, key_partition, state, data, ctx)
        if isinstance(data, ApplicationCompleted):
            if normalize_partition(data.partition) != key_partition:
                _LOG.warning(
                    "completion of %s names partition %s but key is %s", data.application_id, data.partition, key
                )
                return Step(state)
            new_state, _ = complete(self._config, key_partition, state, data.application_id)
            return Step(new_state)
        return Step(state)

    def _submitted(
        self,
        key: str,
        key_partition: str,
        state: PartitionState | None,
        data: ApplicationSubmitted,
        ctx: EngineContext,
    ) -> Step[PartitionState]:
        partition = normalize_partition(data.partition)
        if partition != key_partition:
            reason = (
                f"application {data.application_id} names partition {partition} "
                f"but was submitted under key {key} (partition {key_partition})"
            )
            outcome: PlacementOutcome = Rejected(reason)
        else:
            submission = Submission(data.application_id, data.user, tuple(data.groups), data.queue, data.tags)
            state, outcome = place(self._config, partition, state, submission)
        if isinstance(outcome, Placed):
            placed = ApplicationPlaced(
                application_id=data.application_id,
                partition=partition,
                queue=outcome.queue,
                rule=outcome.rule,
                created=outcome.created,
            )
            return Step(state, (Emit("application.placed", placed),))
        rejected = ApplicationRejected(application_id=data.application_id, partition=partition, reason=outcome.reason)
        return Step(state, (Emit("application.rejected", rejected),))

    def on_deleted(self, key: str, state: PartitionState | None, ctx: EngineContext) -> Step[PartitionState]:
        """A tombstone on the submissions topic changes nothing: completions remove applications."""
        return Step(state)

    def decide(self, key: str, state: PartitionState, ctx: EngineContext) -> Step[PartitionState]:
        """Decisions are made per event, so there is nothing to re-decide."""
        return Step(state)

    def on_config(self, key: str, state: PartitionState, ctx: EngineContext) -> Step[PartitionState]:
        """A5/N: a dropped partition forgets its subject; otherwise the queue tree follows the file. Queue
        placement has no timers (cleanup is synchronous with completions, M4) and reads no inventory."""
        if self._config is None:
            return Step(state)
        return Step(apply_config(self._config, partition_of_key(key), state))

    def track(self, key: str, state: PartitionState | None) -> None:
        """No indexes to keep."""

    def state_changes(self, old: PartitionState | None, new: PartitionState | None) -> Iterable[StatePart]:
        """The queue records as the subject's own entry, and one entry per changed application, so placing
        one application writes one small entry whatever the partition holds."""
        before, after = old or PartitionState(), new or PartitionState()
        parts: list[StatePart] = []
        if new is None:
            parts.append(("", None))
        elif (
            old is None
            or _differ(before.queues, after.queues)
            or _differ(before.configured_in_use, after.configured_in_use)
        ):
            parts.append(("", dump_partition_meta(after)))
        parts.extend(
            (_APP_PART + app_id, None if app is None else dump_application(app))
            for app_id, app in changed_items(before.applications, after.applications)
        )
        return parts

    def load_part(
        self, state: PartitionState | None, part: str, raw: Mapping[str, Any] | None
    ) -> PartitionState | None:
        """Apply one changelog entry of `state_changes`.

        Raises:
            InvalidStateError: unknown part or unreadable entry.
        """
        current = state or PartitionState()
        if not part:
            current = load_partition_meta({} if raw is None else raw, current)
        elif part.startswith(_APP_PART) and len(part) > len(_APP_PART):
            app_id = part[len(_APP_PART) :]
            applications = current.applications
            if raw is None:
                applications = without_item(applications, app_id)
            else:
                applications = with_item(applications, app_id, load_application(raw, app_id))
            current = replace(current, applications=applications)
        else:
            raise InvalidStateError(f"unknown queue state part {part!r}")
        return _keep(current)

    def explain(self, key: str, state: PartitionState, ctx: EngineContext) -> dict[str, Any]:
        """What the partition holds and the rule chain the next submission meets; built from state, pure."""
        return explain_partition(key, state, self._config)

    def what_if(self, key: str, state: PartitionState | None, event: DecodedEvent, ctx: EngineContext) -> WhatIf:
        """Where a submission would be placed (or why rejected) in the partition as it is, next to the queue the
        application runs in now, if it does; pure, like every call of this engine."""
        step = self.on_event(key, state, event, ctx)
        app_id = getattr(event.data, "application_id", "")
        running = None if state is None else state.applications.get(app_id)
        current = None if running is None else {"application": app_id, "queue": running.queue, "rule": running.rule}
        decision: dict[str, Any] | None = None
        for emit in step.emits:
            if isinstance(emit.data, ApplicationPlaced):
                decision = {"application": app_id, "queue": emit.data.queue, "rule": emit.data.rule}
            elif isinstance(emit.data, ApplicationRejected):
                decision = {"application": app_id, "rejected": emit.data.reason}
        explained = None if step.state is None else explain_partition(key, step.state, self._config)
        return WhatIf(decision, current, explained)

    def dump_state(self, state: PartitionState) -> dict[str, Any]:
        """The state as JSON (see `dump_partition_state`)."""
        return dump_partition_state(state)

    def load_state(self, raw: Mapping[str, Any]) -> PartitionState:
        """Rebuild state from `dump_state` output.

        Raises:
            InvalidStateError: the value is not a dumped partition state.
        """
        try:
            return load_partition_state(raw)
        except InvalidStateError:
            raise
        except (AttributeError, TypeError, ValueError) as exc:
            raise InvalidStateError(f"queue state cannot be read: {exc}") from exc
