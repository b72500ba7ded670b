"""What /livez and /readyz answer: progress, broker reachability, failing tasks, start-up and stop."""

from __future__ import annotations

import time

import pytest

from streams.health import Health
from streams.metrics import Metrics
from streams.settings import stable_identity


def started() -> Health:
    health = Health(Metrics(), liveness_timeout=0.2)
    health.started = True
    return health


@pytest.mark.parametrize(
    ("change", "ready"),
    [
        (lambda h: None, True),
        (lambda h: setattr(h, "started", False), False),
        (lambda h: setattr(h, "stopping", True), False),
        (lambda h: h.note_broker(False, TimeoutError()), False),
        (lambda h: h.failing_tasks.add(2), False),
    ],
    ids=["ready", "starting", "stopping", "broker-away", "task-failing"],
)
def test_readiness_says_why_not(change: object, ready: bool) -> None:
    health = started()
    change(health)  # type: ignore[operator]
    assert health.ready() is ready


def test_readiness_comes_back_by_itself() -> None:
    health = started()
    health.note_broker(False)
    health.failing_tasks.add(1)
    assert not health.ready()
    health.note_broker(True)
    health.failing_tasks.discard(1)
    assert health.ready()


def test_liveness_turns_false_when_progress_stops_and_after_a_crash() -> None:
    health = started()
    assert health.alive()
    time.sleep(0.25)
    assert not health.alive()
    health.progressed()
    assert health.alive()
    health.crashed = True
    assert not health.alive()


@pytest.mark.parametrize(
    ("environ", "identity"),
    [
        ({"KUBERNETES_SERVICE_HOST": "10.0.0.1", "HOSTNAME": "placement-2"}, "placement-2"),
        ({"KUBERNETES_SERVICE_HOST": "10.0.0.1", "HOSTNAME": "placement-7d9f8-x2kq"}, None),  # a Deployment pod
        ({"HOSTNAME": "placement-2"}, None),  # not in Kubernetes: a host name may be shared
        ({"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, None),
    ],
)
def test_static_membership_defaults_to_a_statefulset_pod_name(environ: dict[str, str], identity: str | None) -> None:
    assert stable_identity(environ) == identity


def test_refused_topics_are_not_ready_yet_alive_without_progress() -> None:
    """A restart would be refused the same way: liveness does not ask for one."""
    health = started()
    health.refuse("partition count changed")
    time.sleep(0.25)
    assert not health.ready() and health.alive()
    health.crashed = True
    assert not health.alive()
    health.crashed = False
    health.refuse(None)
    assert not health.alive(), "progress counts again once the topics are accepted"
