"""The placement algorithm for one submission (spec B3, F, G): pure, state in and state out."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

import orjson

from engine.queue.config import PartitionConfig
from engine.queue.names import RECOVERY_QUEUE, ROOT, matches_filter_user
from engine.queue.persistent import with_item
from engine.queue.rules.base import Applicant, RuleError
from engine.queue.state import ActiveApplication, PartitionState
from engine.queue.tree import QueueView, create_queues, remember_configured

__all__ = [
    "DEFAULT_QUEUE",
    "FALLBACK_RULE",
    "FORCE_TAG",
    "Placed",
    "PlacementOutcome",
    "Rejected",
    "Submission",
    "is_forced",
    "place_application",
    "resolve_applicant",
]

_LOG = logging.getLogger(__name__)

FORCE_TAG = "application.create.force"
DEFAULT_QUEUE = f"{ROOT}.default"
FALLBACK_RULE = "default"
"""The `rule` reported when the `root.default` fallback (G5) placed the application."""
_GO_TRUE = frozenset(("1", "t", "T", "true", "TRUE", "True"))


@dataclass(frozen=True, slots=True)
class Submission:
    """What an `application.submitted` event asks for (B1)."""

    application_id: str
    user: str = ""
    groups: tuple[str, ...] = ()
    queue: str = ""
    tags: Mapping[str, str] = field(default_factory=dict)

    def fingerprint(self) -> str:
        """A digest of the content, to recognise a re-delivered submission (decided item 1)."""
        content = {"user": self.user, "groups": self.groups, "queue": self.queue, "tags": dict(self.tags)}
        return hashlib.sha256(orjson.dumps(content, option=orjson.OPT_SORT_KEYS)).hexdigest()


@dataclass(frozen=True, slots=True)
class Placed:
    """Accepted into a lower-case leaf queue by the named rule; `created` when queues had to be created."""

    queue: str
    rule: str
    created: bool


@dataclass(frozen=True, slots=True)
class Rejected:
    """Not accepted; the reason is one of the spec's messages."""

    reason: str


PlacementOutcome = Placed | Rejected


def is_forced(tags: Mapping[str, str]) -> bool:
    """Spec G7: the force tag (key in any case) holding a Go `ParseBool` true value; the first such key counts."""
    for key, value in tags.items():
        if key.lower() == FORCE_TAG:
            return value in _GO_TRUE
    return False


def resolve_applicant(submission: Submission) -> Applicant | str:
    """Spec F1-F3: the user and groups placement works with, or the rejection reason."""
    forced = is_forced(submission.tags)
    user, groups = submission.user, submission.groups
    if not user:
        if not forced:
            return "empty user cannot resolve"
        user, groups = "nobody", ("nogroup",)
    elif not groups:
        groups = (user,)
    elif not matches_filter_user(user):
        return "invalid username, it contains invalid characters"
    return Applicant(user=user, groups=groups, queue=submission.queue, tags=submission.tags, forced=forced)


def _passes_vetting(view: QueueView, path: str, app: Applicant) -> bool:
    """Spec G4: an existing queue must be a running leaf the user may submit to; a missing one needs
    submit access on its nearest existing ancestor."""
    if view.exists(path):
        return view.is_leaf(path) and not view.is_draining(path) and view.can_submit(path, app)
    return view.can_submit(view.nearest_existing(path), app)


def _accept(
    view: QueueView, submission: Submission, app: Applicant, queue: str, rule: str
) -> tuple[PartitionState, PlacementOutcome]:
    created = create_queues(view, queue, app)
    if isinstance(created, str):
        reason = f"failed to create rule based queue {queue} for application {submission.application_id}: {created}"
        _LOG.info("application %s rejected: %s", submission.application_id, reason)
        return view.state, Rejected(reason)
    state, new_queues = created
    outcome = Placed(queue=queue, rule=rule, created=bool(new_queues))
    active = ActiveApplication(queue, rule, outcome.created, submission.fingerprint())
    state = PartitionState(
        queues=state.queues,
        applications=with_item(state.applications, submission.application_id, active),
        configured_in_use=remember_configured(QueueView(view.partition, state), queue),
    )
    return state, outcome


def place_application(
    partition: PartitionConfig, state: PartitionState, submission: Submission
) -> tuple[PartitionState, PlacementOutcome]:
    """Run the partition's rules for one submission (G1-G10).

    Returns:
        The new state (unchanged on rejection) and the outcome.
    """
    app_id = submission.application_id
    existing = state.applications.get(app_id)
    if existing is not None:
        if existing.fingerprint == submission.fingerprint():
            return state, Placed(existing.queue, existing.rule, existing.created)
        reason = f"adding application {app_id} to partition {partition.name}, but application already existed"
        _LOG.info("application %s rejected: %s", app_id, reason)
        return state, Rejected(reason)
    app = resolve_applicant(submission)
    if isinstance(app, str):
        _LOG.info("application %s rejected: %s", app_id, app)
        return state, Rejected(app)
    view = QueueView(partition, state)
    for rule in partition.rules:
        result = rule.place(app, view)
        if result is None:
            continue
        if isinstance(result, RuleError):
            reason = f"failed to place application {app_id}: {result.message}"
            _LOG.error("application %s rejected: %s", app_id, reason)
            return state, Rejected(reason)
        if result == RECOVERY_QUEUE:
            if app.forced:
                return _accept(view, submission, app, result, rule.NAME)
            continue
        if _passes_vetting(view, result, app):
            return _accept(view, submission, app, result, rule.NAME)
    if not app.forced and view.exists(DEFAULT_QUEUE) and _passes_vetting(view, DEFAULT_QUEUE, app):
        return _accept(view, submission, app, DEFAULT_QUEUE, FALLBACK_RULE)
    reason = f"failed to place application {app_id}: application rejected: no placement rule matched"
    _LOG.info("application %s rejected: %s", app_id, reason)
    return state, Rejected(reason)
