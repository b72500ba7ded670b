"""Helpers shared by the queue engine tests: configuration text from Python structures and one-call
placement on a fresh partition."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from engine.errors import QueueConfigError
from engine.queue.config import QueueConfig, load_queue_config
from engine.queue.engine import complete, place
from engine.queue.placement import PlacementOutcome, Submission
from engine.queue.state import PartitionState

__all__ = [
    "STANDARD_QUEUES",
    "config_text",
    "existing_queues",
    "finish",
    "load",
    "submission",
    "submit",
    "submit_once",
]

STANDARD_QUEUES: list[dict[str, Any]] = [
    {
        "name": "root",
        "submitacl": "*",
        "queues": [
            {"name": "default"},
            {"name": "sandbox"},
            {"name": "alice"},
            {"name": "finance_dot_test"},
            {"name": "users", "parent": True},
            {"name": "dev", "queues": [{"name": "alice"}]},
            {"name": "namespaces", "parent": True},
        ],
    }
]
"""A tree most rule tests use: open to everyone, a few leaves and parents."""


def config_text(queues: Any = None, rules: Any = None, partition: str = "default", **extra: Any) -> str:
    """A one-partition configuration file; strings that YAML would retype are emitted quoted."""
    body: dict[str, Any] = {"name": partition, "queues": STANDARD_QUEUES if queues is None else queues}
    if rules is not None:
        body["placementrules"] = rules
    body.update(extra)
    return yaml.safe_dump({"partitions": [body]}, sort_keys=False)


def config_error(text: str) -> str:
    """The message of the QueueConfigError a configuration text raises."""
    with pytest.raises(QueueConfigError) as error:
        load_queue_config(text, "queues.yaml")
    return str(error.value)


def config_error_of(queues: Any = None, rules: Any = None, **extra: Any) -> str:
    """The error of a one-partition configuration built by `config_text`."""
    return config_error(config_text(queues, rules, **extra))


def load(queues: Any = None, rules: Any = None, **extra: Any) -> QueueConfig:
    """Load a one-partition configuration built by `config_text`."""
    return load_queue_config(config_text(queues, rules, **extra), "queues.yaml")


def submission(
    app_id: str = "app-1",
    user: str = "alice",
    groups: tuple[str, ...] = (),
    queue: str = "",
    tags: dict[str, str] | None = None,
) -> Submission:
    """A submission with test defaults."""
    return Submission(app_id, user, groups, queue, tags or {})


def submit_once(config: QueueConfig, **fields: Any) -> PlacementOutcome:
    """Place one submission in the `default` partition of a fresh state."""
    _, outcome = place(config, "default", None, submission(**fields))
    return outcome


def submit(
    config: QueueConfig, state: PartitionState | None, **fields: Any
) -> tuple[PartitionState | None, PlacementOutcome]:
    """Place one submission in the `default` partition."""
    return place(config, "default", state, submission(**fields))


def finish(
    config: QueueConfig, state: PartitionState | None, app_id: str
) -> tuple[PartitionState | None, tuple[str, ...] | None]:
    """Complete one application in the `default` partition."""
    return complete(config, "default", state, app_id)


def existing_queues(config: QueueConfig, state: PartitionState | None, partition: str = "default") -> set[str]:
    """Every queue path of the partition: configured plus the state's dynamic and draining queues."""
    found = config.partition(partition)
    configured = set(found.queues) if found is not None else set()
    return configured | set(state.queues if state is not None else ())
