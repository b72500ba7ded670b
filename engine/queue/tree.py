"""A partition's queue tree: configured queues from the file merged with the state's dynamic and draining
queues (spec K6-K8, L, M, N). Every operation returns a new `PartitionState`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import replace
from functools import lru_cache
from types import MappingProxyType

from engine.queue.config import PartitionConfig
from engine.queue.names import RECOVERY_LEVEL, RECOVERY_QUEUE, ROOT, parent_path
from engine.queue.persistent import without_item
from engine.queue.rules.base import Applicant
from engine.queue.state import ActiveApplication, PartitionState, QueueRecord

__all__ = ["QueueView", "complete_application", "create_queues", "reconcile", "remember_configured"]


@lru_cache(maxsize=65_536)
def _ancestors_or_self(path: str) -> tuple[str, ...]:
    """The path and its ancestors up to root; cached, as every placement walks them several times."""
    chain = [path]
    while (parent := parent_path(chain[-1])) is not None:
        chain.append(parent)
    return tuple(chain)


def _depth_first(paths: Iterable[str]) -> list[str]:
    """Deepest paths first, so children are handled before their parents."""
    return sorted(paths, key=lambda path: (-path.count("."), path))


class QueueView:
    """Read access to the merged tree; configured queues win over state records with the same path."""

    def __init__(self, partition: PartitionConfig, state: PartitionState) -> None:
        self.partition = partition
        self.state = state
        self._app_counts: Counter[str] | None = None

    def record(self, path: str) -> QueueRecord | None:
        """The queue's properties, None when it does not exist."""
        configured = self.partition.queues.get(path)
        if configured is not None:
            return configured.record
        return self.state.queues.get(path)

    def exists(self, path: str) -> bool:
        """Whether the queue exists (configured, dynamic or draining)."""
        return path in self.partition.queues or path in self.state.queues

    def is_leaf(self, path: str) -> bool:
        """Whether an existing queue is a leaf."""
        record = self.record(path)
        return record is not None and not record.parent

    def is_configured(self, path: str) -> bool:
        """Defined in the active file (and so running, not draining)."""
        return path in self.partition.queues

    def is_draining(self, path: str) -> bool:
        """Spec N3: formerly configured, waiting to empty."""
        record = None if self.is_configured(path) else self.state.queues.get(path)
        return record is not None and record.draining

    def nearest_existing(self, path: str) -> str:
        """The queue itself or its closest existing ancestor (root always exists)."""
        return next((item for item in _ancestors_or_self(path) if self.exists(item)), ROOT)

    def can_submit(self, path: str, app: Applicant) -> bool:
        """Spec K6-K8: submit or admin ACL of the queue or any ancestor; never the recovery queue."""
        if path == RECOVERY_QUEUE:
            return False
        for item in _ancestors_or_self(path):
            record = self.record(item)
            if record is not None and (
                record.submit_acl.allows(app.user, app.groups) or record.admin_acl.allows(app.user, app.groups)
            ):
                return True
        return False

    def children(self, path: str) -> set[str]:
        """Existing child paths."""
        found = set(self.partition.children.get(path, ()))
        found.update(item for item in self.state.queues if parent_path(item) == path)
        return found

    def application_count(self, path: str) -> int:
        """Active applications in the queue."""
        if self._app_counts is None:
            self._app_counts = Counter(app.queue for app in self.state.applications.values())
        return self._app_counts[path]


def create_queues(view: QueueView, path: str, app: Applicant) -> tuple[PartitionState, tuple[str, ...]] | str:
    """Spec L3-L5: create every missing level of `path` as a dynamic queue.

    Returns:
        The new state and the created paths (top first), or the failure reason (L4).
    """
    if view.exists(path):
        return view.state, ()
    if path == RECOVERY_QUEUE:
        queues = {**view.state.queues, path: QueueRecord(parent=False)}
        return replace(view.state, queues=MappingProxyType(queues)), (path,)
    ancestor = view.nearest_existing(path)
    if not view.can_submit(ancestor, app):
        return f"submit access to queue {ancestor} denied during create of: {path}"
    if view.is_leaf(ancestor):
        return f"creation of queue {path} failed parent is already a leaf: {ancestor}"
    if view.is_draining(ancestor):
        return f"cannot add a child queue when queue is marked for deletion: {ancestor}"
    missing = [item for item in reversed(_ancestors_or_self(path)) if len(item) > len(ancestor)]
    if any(item.rpartition(".")[2] == RECOVERY_LEVEL for item in missing):
        return f"dynamic queue cannot be {RECOVERY_QUEUE}"
    queues = dict(view.state.queues)
    for item in missing:
        queues[item] = QueueRecord(parent=item != path)
    return replace(view.state, queues=MappingProxyType(queues)), tuple(missing)


def remember_configured(view: QueueView, path: str) -> Mapping[str, QueueRecord]:
    """Snapshot the configured ancestors of an occupied queue, for a later reload (N3); the same mapping
    when it already holds them, which is the common case."""
    known = view.state.configured_in_use
    fresh = {
        item: configured.record
        for item in _ancestors_or_self(path)
        if (configured := view.partition.queues.get(item)) is not None
        and (held := known.get(item)) is not configured.record
        and held != configured.record
    }
    return MappingProxyType({**known, **fresh}) if fresh else known


def _removable(view: QueueView, path: str) -> bool:
    return (
        path != ROOT
        and not view.is_configured(path)
        and path in view.state.queues
        and view.application_count(path) == 0
        and not view.children(path)
    )


def _delete_empty_upwards(
    partition: PartitionConfig, state: PartitionState, start: str
) -> tuple[PartitionState, tuple[str, ...]]:
    removed: list[str] = []
    current: str | None = start
    while current is not None:
        view = QueueView(partition, state)
        if not _removable(view, current):
            break
        queues = {key: value for key, value in state.queues.items() if key != current}
        state = replace(state, queues=MappingProxyType(queues))
        removed.append(current)
        current = parent_path(current)
    return state, tuple(removed)


def complete_application(
    partition: PartitionConfig, state: PartitionState, application_id: str
) -> tuple[PartitionState, tuple[str, ...]] | None:
    """Spec B4, M1-M3: remove the application, then empty dynamic or draining queues from the leaf up.

    Returns:
        The new state and the deleted paths (leaf first), or None for an unknown application.
    """
    active: ActiveApplication | None = state.applications.get(application_id)
    if active is None:
        return None
    state = replace(state, applications=without_item(state.applications, application_id))
    return _delete_empty_upwards(partition, state, active.queue)


def reconcile(partition: PartitionConfig, state: PartitionState) -> tuple[PartitionState, tuple[str, ...]]:
    """Spec N1-N3 after a new file became active.

    Configured queues the state knew and the file dropped become draining; dynamic or draining queues the
    file now defines become configured; empty draining queues are deleted at once.

    Returns:
        The new state and the draining queues deleted now.
    """
    queues = {path: record for path, record in state.queues.items() if path not in partition.queues}
    for path, record in state.configured_in_use.items():
        if path not in partition.queues:
            queues[path] = replace(record, draining=True)
    state = PartitionState(queues=MappingProxyType(queues), applications=state.applications)
    removed: list[str] = []
    for path in _depth_first(path for path, record in queues.items() if record.draining):
        if path not in state.queues:
            continue
        state, gone = _delete_empty_upwards(partition, state, path)
        removed.extend(gone)
    snapshot: dict[str, QueueRecord] = {}
    occupied = {app.queue for app in state.applications.values()} | set(state.queues)
    for path in occupied:
        for item in _ancestors_or_self(path):
            configured = partition.queues.get(item)
            if configured is not None:
                snapshot[item] = configured.record
    return replace(state, configured_in_use=MappingProxyType(snapshot)), tuple(removed)
