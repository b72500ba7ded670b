"""Topic roles, default names and the configs the processor creates them with."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["LARGE_RECORD_BYTES", "TOPIC_SPECS", "TopicRole", "TopicSpec"]


class TopicRole(StrEnum):
    """What a topic is for; actual names are configurable per role."""

    SUBMISSIONS = "submissions"
    CLUSTER_STATUS = "cluster-status"
    TAINTS = "taints"
    ADVISOR_RECOMMENDATIONS = "advisor-recommendations"
    ADVISOR_REQUESTS = "advisor-requests"
    DECISIONS = "decisions"
    CHANGELOG = "changelog"
    DEAD_LETTER = "dead-letter"


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """Default name and creation policy of one topic role.

    `co_partitioned` topics share the task partition count so one instance owns a subject everywhere.
    """

    role: TopicRole
    default_name: str
    cleanup_policy: str
    co_partitioned: bool
    max_message_bytes: int | None = None
    """Raised above the broker's 1 MiB default where one record holds a subject's whole state or decision."""


LARGE_RECORD_BYTES = 16 * 1024 * 1024
"""A YuniKorn partition's state grows by ~150 bytes per running application: 16 MiB holds ~100,000."""

TOPIC_SPECS: dict[TopicRole, TopicSpec] = {
    spec.role: spec
    for spec in (
        TopicSpec(TopicRole.SUBMISSIONS, "placement.submissions", "delete", True),
        TopicSpec(TopicRole.CLUSTER_STATUS, "placement.cluster-status", "compact", False),
        TopicSpec(TopicRole.TAINTS, "placement.taints", "compact", False),
        TopicSpec(TopicRole.ADVISOR_RECOMMENDATIONS, "placement.advisor-recommendations", "delete", True),
        TopicSpec(TopicRole.ADVISOR_REQUESTS, "placement.advisor-requests", "delete", True),
        TopicSpec(TopicRole.DECISIONS, "placement.decisions", "compact", True, LARGE_RECORD_BYTES),
        TopicSpec(TopicRole.CHANGELOG, "placement.state-changelog", "compact", True, LARGE_RECORD_BYTES),
        TopicSpec(TopicRole.DEAD_LETTER, "placement.dead-letter", "delete", False),
    )
}
