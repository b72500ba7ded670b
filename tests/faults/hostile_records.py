"""The model of the hostile corpus: records, the outcomes they are owed, builders of their payloads and the
builder every class of records uses (hostile_corpus.py lists the classes)."""

from __future__ import annotations

import itertools
import random
import re
import string
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

import orjson

from topics.errors import Stage
from topics.names import TopicRole

SEED = 20261123
BASE_TIME = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)
STEP = timedelta(milliseconds=5)
"""Record times advance 5 ms a record: the corpus spans seconds, far below the 600 s resync period."""
BROKER_MESSAGE_LIMIT = 1_048_588
"""Kafka's default `message.max.bytes` (1 MiB + 12): localbroker's server.properties keeps it, and the processor
creates the input and dead-letter topics without `max.message.bytes`."""
RANDOM_BLOB_BYTES = 1_048_576 - 8_192
"""The largest random value that still fits one record batch under that limit, with its key and overhead."""
HUGE_MAP_ENTRIES = 100_000
BIG = 500_000
"""Characters of the oversize names and values."""
TOO_LARGE_BYTES = 2 * 1024 * 1024
"""Above the 1.5 MiB a Kubernetes API server stores: such a value is sent compressed and must be refused."""

S, C, T, R = TopicRole.SUBMISSIONS, TopicRole.CLUSTER_STATUS, TopicRole.TAINTS, TopicRole.ADVISOR_RECOMMENDATIONS
DEC, VAL = Stage.DECODE, Stage.VALIDATE
STAGES = frozenset({Stage.DECODE, Stage.VALIDATE, Stage.PROCESS})
SET_LABEL = "cluster.open-cluster-management.io/clusterset"
CLAIM = "platform.open-cluster-management.io"
HOSTILE_CLUSTERS = {  # name: env, region, allocatable cpu, platform claim
    "hc1": ("prod", "us-east", "8", "AWS"),
    "hc2": ("prod", "us-west", "16", "GCP"),
    "hc3": ("dev", "eu-west", "32", "AWS"),
    "hc4": ("dev", "us-east", "64", "Azure"),
}
ALL = frozenset(HOSTILE_CLUSTERS)
NONE: frozenset[str] = frozenset()


class Outcome(StrEnum):
    """What the processor owes a record."""

    DEAD_LETTER = "dead-letter"
    DECIDED = "decided"
    """Accepted and acted on: a subject gets its decision, an inventory record changes the inventory."""


@dataclass(frozen=True, slots=True)
class PlacementDecision:
    """The placement's last `placement.decided` must select exactly `clusters` (None: any selection)."""

    subject: str
    clusters: frozenset[str] | None


@dataclass(frozen=True, slots=True)
class AppDecision:
    """The application must be placed in `queue`, or rejected when `queue` is None."""

    application_id: str
    queue: str | None


@dataclass(frozen=True, slots=True)
class HostileRecord:
    """One input record and what must become of it."""

    kind: str
    variant: str
    topic: TopicRole
    key: bytes | None
    value: bytes | None
    outcome: Outcome
    reason: str = ""
    """Regular expression the dead letter's `exception.message` must match (case-insensitive)."""
    stage: str | None = None
    """The dead letter's stage when only one is right (None: any of DECODE, VALIDATE, PROCESS)."""
    check: PlacementDecision | AppDecision | None = None
    replay_outcome: Outcome | None = None
    """Replay derives a missing key from the payload, so a keyless record is decided there."""
    index: int = -1
    time: datetime = BASE_TIME
    baseline: bool = False
    """Part of the inventory the predictions rest on (the corpus starts with these)."""

    @property
    def bad(self) -> bool:
        """Whether a Kafka processor must dead-letter it."""
        return self.outcome is Outcome.DEAD_LETTER

    def expected(self, *, replay: bool) -> Outcome:
        """The outcome owed on one transport."""
        return (self.replay_outcome or self.outcome) if replay else self.outcome

    def label(self) -> str:
        """Short identification for failure messages."""
        return f"#{self.index} {self.kind}/{ascii(self.variant)[1:-1][:60]}"

    def replay_line(self) -> bytes:
        """The record as a `placement-stream replay` input line, its value bytes carried as text.

        Replay lines are JSON, so bytes that are not UTF-8 travel as their Latin-1 reading: garbage still, as the
        generator starts every such value with a byte no JSON text starts with.
        """
        line: dict[str, Any] = {"topic": self.topic.value, "timestamp": self.time.isoformat().replace("+00:00", "Z")}
        if self.key is not None:
            line["key"] = _text(self.key)
        line["value"] = None if self.value is None else _text(self.value)
        return orjson.dumps(line)


def _text(raw: bytes) -> str:
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return raw.decode("latin-1")


# --- building blocks -------------------------------------------------------------------------------------------
def event(kind: str, data: Any, **envelope: Any) -> dict[str, Any]:
    """A structured-mode CloudEvent; `kind` gets `.v1` unless `type` is given."""
    value = {"specversion": "1.0", "id": "hostile", "source": "/tests/hostile", "type": f"{kind}.v1"}
    value.update(time="2026-11-23T10:00:00Z", datacontenttype="application/json", data=data, **envelope)
    return value


def hole(name: str) -> str:
    """A placeholder string `encode` replaces by raw JSON text."""
    return f"\x00hole:{name}\x00"


def encode(value: Any, **holes: bytes) -> bytes:
    """JSON of `value` with each `hole(name)` replaced by `holes[name]`: text orjson will not write (1e400, NaN,
    2**200, lone surrogate escapes, thousands of nesting levels)."""
    raw = orjson.dumps(value)
    for name, text in holes.items():
        marker = orjson.dumps(hole(name))
        assert marker in raw, name
        raw = raw.replace(marker, text)
    return raw


def placement(namespace: str, name: str, spec: dict[str, Any] | None = None, **metadata: Any) -> dict[str, Any]:
    """Placement data choosing from the namespace's set (`weird` in namespace weird, `hostile` elsewhere)."""
    meta = {"name": name, "namespace": namespace, "generation": 1, **metadata}
    cluster_sets = ["weird" if namespace == "weird" else "hostile"]
    kind = {"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement"}
    return {**kind, "metadata": meta, "spec": {"clusterSets": cluster_sets, **(spec or {})}}


def cluster(name: str, labels: dict[str, str], cpu: str = "4", platform: str = "") -> dict[str, Any]:
    """ManagedCluster data."""
    resources = {"cpu": cpu, "memory": "16Gi"}
    claims = [{"name": CLAIM, "value": platform}] if platform else []
    status = {"allocatable": resources, "capacity": resources, "clusterClaims": claims}
    return {"metadata": {"name": name, "labels": labels}, "status": status}


def submission(application_id: str, user: str, groups: list[str], queue: str = "") -> dict[str, Any]:
    """application.submitted data in the default partition."""
    return {"applicationId": application_id, "partition": "default", "user": user, "groups": groups, "queue": queue}


def predicate(**selector: Any) -> dict[str, Any]:
    """A spec with one `requiredClusterSelector`."""
    return {"predicates": [{"requiredClusterSelector": selector}]}


def labels(**match: str) -> dict[str, Any]:
    return {"matchLabels": match}


def expression(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": operator, "values": list(values)}]}


def cel(*expressions: str) -> dict[str, Any]:
    return predicate(celSelector={"celExpressions": list(expressions)})


def by_cpu(weight: Any, clusters: int | None = None) -> dict[str, Any]:
    """Exact ResourceAllocatableCPU prioritizer (deterministic: no Balance or Steady), optionally top-N."""
    configuration = {"scoreCoordinate": {"type": "BuiltIn", "builtIn": "ResourceAllocatableCPU"}, "weight": weight}
    spec: dict[str, Any] = {"prioritizerPolicy": {"mode": "Exact", "configurations": [configuration]}}
    return spec if clusters is None else {"numberOfClusters": clusters, **spec}


_USER_CHARSET = re.compile(r"[_a-zA-Z][a-zA-Z0-9:#/_.@-]*\$?")


def expected_queue(user: str, groups: list[str], queue: str) -> str | None:
    """Where hostile_queues.yaml puts an application (None: rejected).

    Rule 1 admits users matching `(a+)+$`, rule 2 groups matching `(a|aa)+$`; both hold exactly for a name ending
    in "a". Without groups a user's only group is the user; with groups the user name must be a valid one.
    """
    if groups and _USER_CHARSET.fullmatch(user) is None:
        return None
    if user.endswith("a"):
        return "root.regexok"
    if any(group.endswith("a") for group in groups or [user]):
        return "root.grouped"
    return "root.analytics" if queue.lower().removeprefix("root.") == "analytics" else "root.fallback"


def _short_keys(count: int) -> list[str]:
    """Distinct three-character label keys: 100,000 labels with empty values stay under 1 MiB."""
    triples = itertools.product(string.ascii_letters + string.digits, repeat=3)
    return ["".join(chars) for chars in itertools.islice(triples, count)]


HUGE_LABELS = dict.fromkeys(_short_keys(HUGE_MAP_ENTRIES), "")


@dataclass
class _Builder:
    """Accumulates records; names stay unique, so each good placement and application is a new subject."""

    rng: random.Random
    kind: str = ""
    records: list[HostileRecord] = field(default_factory=list)
    counter: Iterator[int] = field(default_factory=itertools.count)

    def unique(self, prefix: str) -> str:
        return f"{prefix}-{next(self.counter)}"

    def add(self, variant: str, topic: TopicRole, key: str | bytes | None, value: Any, outcome: Outcome,
            **extra: Any) -> None:  # fmt: skip
        raw_key = key.encode() if isinstance(key, str) else key
        raw_value = orjson.dumps(value) if isinstance(value, dict) else value
        self.records.append(HostileRecord(self.kind, variant, topic, raw_key, raw_value, outcome, **extra))

    def bad(self, variant: str, topic: TopicRole, key: str | bytes | None, value: Any, reason: str, stage: str | None,
            times: int = 1, **extra: Any) -> None:  # fmt: skip
        for _ in range(times):
            self.add(variant, topic, key, value, Outcome.DEAD_LETTER, reason=reason, stage=stage, **extra)

    def accepted(self, variant: str, topic: TopicRole, key: str, value: Any) -> None:
        self.add(variant, topic, key, value, Outcome.DECIDED)

    def placement(self, variant: str, namespace: str, spec: dict[str, Any], clusters: frozenset[str] | None,
                  name: str = "", raw: bytes | None = None, **meta: Any) -> None:  # fmt: skip
        """A good placement (a new subject) that must select `clusters`; `raw` replaces its encoded value."""
        name = name or self.unique(variant)
        key = f"Placement/{namespace}/{name}"
        value = raw or event("placement.applied", placement(namespace, name, spec, **meta))
        self.add(variant, S, key, value, Outcome.DECIDED, check=PlacementDecision(key, clusters))

    def app(self, variant: str, user: str, groups: list[str], queue: str = "", app: str = "", **extra: Any) -> None:
        """A good submission that must land where `expected_queue` says."""
        application_id = app or self.unique(f"app-{variant}")
        value = event("application.submitted", {**submission(application_id, user, groups, queue), **extra})
        check = AppDecision(application_id, expected_queue(user, groups, queue))
        self.add(variant, S, "Application/default", value, Outcome.DECIDED, check=check)


# --- the classes -----------------------------------------------------------------------------------------------
