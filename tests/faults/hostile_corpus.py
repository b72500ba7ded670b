"""A seeded corpus of hostile input: what a careless or malicious producer can put on the input topics.

Every record carries its class, the outcome the processor owes it (dead-lettered, or decided) and, for a dead
letter, a pattern its exception message must match, so the reason has to name the problem. Good records are
interleaved with the bad ones and carry the decision they must get: a processor that survives by dropping or
mis-deciding valid input fails too. The replay test and the real-broker test both run this corpus.

Predictions rest on the inventory the corpus starts with (`baseline`): clusters hc1..hc4 in the set `hostile`
(bound in namespace `hostile`), and a set `weird` (namespace `weird`) that the unicode and huge-map clusters join
without moving those predictions.
"""

from __future__ import annotations

import base64
import gzip
import itertools
import random
import re
import string
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

import orjson

from topics.errors import Stage
from topics.names import TopicRole

__all__ = [
    "BROKER_MESSAGE_LIMIT",
    "CLASSES",
    "SEED",
    "AppDecision",
    "HostileRecord",
    "Outcome",
    "PlacementDecision",
    "build_corpus",
    "letter_problem",
    "summarise",
]

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
def baseline(b: _Builder) -> None:
    """Sets, bindings and clusters the predictions rest on; the 100,000-label cluster of the weird set."""
    b.kind = "good"
    for name in ("hostile", "weird"):
        data = {"metadata": {"name": name}, "spec": {"clusterSelector": {"selectorType": "ExclusiveClusterSetLabel"}}}
        b.accepted("clusterset", C, f"ManagedClusterSet/{name}", event("managedclusterset.applied", data))
        data = {"metadata": {"name": name, "namespace": name}, "spec": {"clusterSet": name}}
        value = event("managedclustersetbinding.applied", data)
        b.accepted("binding", C, f"ManagedClusterSetBinding/{name}/{name}", value)
    for name, (env, region, cpu, platform) in HOSTILE_CLUSTERS.items():
        data = cluster(name, {SET_LABEL: "hostile", "env": env, "region": region}, cpu, platform)
        b.accepted("cluster", C, f"ManagedCluster/{name}", event("managedcluster.applied", data))
    b.kind = "huge_labels"
    data = cluster("huge", {SET_LABEL: "weird", **HUGE_LABELS})
    b.accepted("cluster-100k-labels", C, "ManagedCluster/huge", event("managedcluster.applied", data))


GOOD_SPECS: list[tuple[str, dict[str, Any], frozenset[str]]] = [
    ("all", {}, ALL),
    ("env-prod", predicate(labelSelector=labels(env="prod")), frozenset({"hc1", "hc2"})),
    ("region-in", predicate(labelSelector=expression("region", "In", "us-east")), frozenset({"hc1", "hc4"})),
    ("region-notin", predicate(labelSelector=expression("region", "NotIn", "us-east")), frozenset({"hc2", "hc3"})),
    ("claim-aws", predicate(claimSelector=expression(CLAIM, "In", "AWS")), frozenset({"hc1", "hc3"})),
    ("cel-dev", cel("managedCluster.metadata.labels.env == 'dev'"), frozenset({"hc3", "hc4"})),
    ("top2-cpu", by_cpu(1, clusters=2), frozenset({"hc3", "hc4"})),
    ("no-match", predicate(labelSelector=labels(env="qa")), NONE),
    ("or-predicates", {"predicates": [{"requiredClusterSelector": {"labelSelector": labels(region=r)}}
                                      for r in ("us-west", "eu-west")]}, frozenset({"hc2", "hc3"})),
]  # fmt: skip


def good(b: _Builder) -> None:
    """Valid placements and submissions with predicted decisions, and harmless inventory updates."""
    for i in range(420):
        variant, spec, clusters = GOOD_SPECS[i % len(GOOD_SPECS)]
        b.placement(variant, "hostile", spec, clusters)
    users = [("bob", []), ("carol", ["dev"]), ("anna", []), ("erik", ["ops", "data"]), ("ivan", ["ml"])]
    queues = ["", "root.analytics", "analytics", "root.missing", "ROOT.ANALYTICS"]
    for i in range(420):
        user, groups = users[i % len(users)]
        b.app("submission", user, groups, queues[(i // len(users)) % len(queues)])
    for _ in range(30):  # a reverse-DNS prefix before the type is valid
        name = b.unique("prefixed-type")
        raw = orjson.dumps(event("io.example.placement.applied", placement("hostile", name)))
        b.placement("prefixed-type", "hostile", {}, ALL, name=name, raw=raw)
    for i in range(30):  # the weird set's taints move none of the predictions
        taints = {"cluster": "huge", "taints": [{"key": "hostile", "value": str(i), "effect": "PreferNoSelect"}]}
        b.accepted("taints", T, "huge", event("cluster.taints.updated", taints))


def truncated_json(b: _Builder) -> None:
    """Valid events cut short anywhere: never JSON."""
    sources = [
        (S, "Placement/hostile/cut", event("placement.applied", placement("hostile", "cut"))),
        (S, "Application/default", event("application.submitted", submission("cut", "bob", []))),
        (C, "ManagedCluster/hc1", event("managedcluster.applied", cluster("hc1", {SET_LABEL: "hostile"}))),
        (T, "hc2", event("cluster.taints.updated", {"cluster": "hc2", "taints": []})),
    ]
    for i in range(160):
        topic, key, value = sources[i % len(sources)]
        raw = orjson.dumps(value)
        cut = b.rng.randrange(1, len(raw))
        b.bad(f"cut-at-{cut}", topic, key, raw[:cut], r"JSON", DEC)


def binary_bytes(b: _Builder) -> None:
    """Bytes that are no JSON text: random (up to just under the broker's limit), other encodings, compressed,
    schema-registry framing."""
    keys = {S: "Placement/hostile/bin", C: "ManagedCluster/hc1", T: "hc1"}
    reason = r"JSON|UTF-?8|bytes"
    for i in range(110):
        size = b.rng.choice([1, 2, 7, 64, 500, 4096, 65_536]) if i % 10 else b.rng.randrange(1, 200_000)
        topic = (S, C, T)[i % 3]
        b.bad(f"random-{size}", topic, keys[topic], b"\xff" + b.rng.randbytes(size - 1), reason, DEC)
    b.bad("random-just-under-1MiB", S, keys[S], b"\xfe" + b.rng.randbytes(RANDOM_BLOB_BYTES - 1), reason, DEC)
    good = orjson.dumps(event("placement.applied", placement("hostile", "bin")))
    variants = {
        "utf-16-with-bom": ("\ufeff" + good.decode()).encode("utf-16-le"),
        "utf-32": good.decode().encode("utf-32"),
        "utf-8-bom": b"\xef\xbb\xbf" + good,
        "gzip": gzip.compress(good, mtime=0),
        "confluent-wire-format": b"\x00\x00\x00\x00\x2a" + good,
        "base64": base64.b64encode(good),
        "overlong-utf-8": b"\xc0\xaf" + good,
        "cesu-surrogate-bytes": b"\xed\xa0\x80" + good,
        "nul-bytes": b"\x00" * 1024,
        "latin-1-text": "Grüße, Placement".encode("latin-1"),
        "empty": b"",
        "whitespace": b" \t\r\n",
    }
    for variant, raw in variants.items():
        b.bad(variant, S, keys[S], raw, reason, DEC, times=2)


def non_object_json(b: _Builder) -> None:
    """JSON that is not an object: there is no envelope to look at."""
    texts = [b"[]", b"[1,2,3]", b'[{"specversion":"1.0"}]', b"0", b"-3.5", b"1e3", b'"placement.applied"', b'""',
             b"null", b"true", b"false", b"  null  ", b"[" * 60 + b"]" * 60, b'"' + b"s" * 10_000 + b'"']  # fmt: skip
    for text in texts:
        for key in ("Placement/hostile/nonobj", "Application/default", "PlacementRule/hostile/nonobj"):
            b.bad(text.decode().strip()[:20], S, key, text, r"JSON|object", DEC)
    for text in texts[:6]:
        b.bad(f"inventory-{text.decode()[:20]}", C, "ManagedCluster/hc1", text, r"JSON|object", DEC)


def bad_envelope(b: _Builder) -> None:
    """Objects that are no CloudEvents 1.0 event."""
    data = placement("hostile", "env")
    good = event("placement.applied", data)

    def without(name: str) -> dict[str, Any]:
        return {k: v for k, v in good.items() if k != name}

    variants: list[tuple[str, dict[str, Any], str]] = [
        ("specversion-2.0", {**good, "specversion": "2.0"}, r"specversion"),
        ("specversion-0.3", {**good, "specversion": "0.3"}, r"specversion"),
        ("specversion-number", {**good, "specversion": 1.0}, r"specversion"),
        ("specversion-missing", without("specversion"), r"specversion"),
        ("id-number", {**good, "id": 42}, r"\bid\b"),
        ("id-empty", {**good, "id": ""}, r"\bid\b"),
        ("id-null", {**good, "id": None}, r"\bid\b"),
        ("id-missing", without("id"), r"\bid\b"),
        ("source-missing", without("source"), r"source"),
        ("source-object", {**good, "source": {"uri": "/x"}}, r"source"),
        ("type-missing", without("type"), r"\btype\b"),
        ("type-number", {**good, "type": 7}, r"\btype\b"),
        ("type-list", {**good, "type": ["placement.applied.v1"]}, r"\btype\b"),
        ("time-garbage", {**good, "time": "yesterday"}, r"\btime\b"),
        ("time-month-13", {**good, "time": "2026-13-45T99:00:00Z"}, r"\btime\b"),
        ("subject-number", {**good, "subject": 5}, r"subject"),
        ("empty-object", {}, r"envelope|specversion"),
        ("data-only", {"data": data}, r"envelope|specversion"),
        ("data-missing", without("data"), r"data|metadata"),
        ("data-string", {**good, "data": orjson.dumps(data).decode()}, r"data|dictionary|object"),
    ]
    for variant, value, reason in variants:
        b.bad(variant, S, "Placement/hostile/env", value, reason, VAL, times=3)
    for variant, value, reason in variants[:8]:  # the same envelopes around a cluster
        inventory = {**value, "type": "managedcluster.applied.v1", "data": cluster("hc1", {})}
        b.bad(f"inventory-{variant}", C, "ManagedCluster/hc1", inventory, reason, VAL)


def unknown_type(b: _Builder) -> None:
    """Types the catalogue does not have, spelled as a careless producer might."""
    data = placement("hostile", "unknown")
    types = ["placement.exploded.v1", "placement.v1", "Placement.Applied.v1", "PLACEMENT.APPLIED.V1",
             "placement.applied", "placement-applied-v1", "io.example.nothing.here.v1", "application.deleted.v1",
             "placement.applied.v1.extra", " placement.applied.v1", "placement.applied.v1 ", "placement..applied.v1",
             "x" * 10_000 + ".v1", "placement.applied/v1", "placement.applied.v1\n",
             # a type pattern with nested repetition takes quadratic time on these (seconds for the first)
             "a." * 20_000 + "v1.", "a." * 5_000 + "v1x"]  # fmt: skip
    for wire_type in types:
        variant = wire_type if len(wire_type) <= 40 else f"{wire_type[:12]}...{wire_type[-4:]} ({len(wire_type)} chars)"
        value = event("", data, type=wire_type)
        b.bad(variant, S, "Placement/hostile/unknown", value, r"event type|version suffix", VAL, times=5)


def unknown_version(b: _Builder) -> None:
    """Known types with a version other than v1, spelled every way a producer might."""
    suffixes = ["v2", "v01", "v0", "v00", "v001", "v10", "v1.0", "v-1", "V1", "v", "v" + "9" * 23, "v\u0661"]
    subjects = [
        ("placement.applied", "Placement/hostile/version", placement("hostile", "version")),
        ("application.submitted", "Application/default", submission("version", "bob", [])),
    ]
    for suffix, (kind, key, data) in itertools.product(suffixes, subjects):
        b.bad(f"{kind}.{suffix}", S, key, event("", data, type=f"{kind}.{suffix}"), r"version", VAL, times=3)


def bad_key(b: _Builder) -> None:
    """Missing, null, empty and malformed record keys."""
    for _ in range(10):  # no key: Kafka must dead-letter; replay derives the key from the payload and decides
        name, app, mc = b.unique("keyless"), b.unique("keyless-app"), b.unique("keyless")
        check = PlacementDecision(f"Placement/hostile/{name}", ALL)
        value = event("placement.applied", placement("hostile", name))
        b.bad("null-key-placement", S, None, value, r"key", VAL, replay_outcome=Outcome.DECIDED, check=check)
        value = event("application.submitted", submission(app, "bob", [], "root.analytics"))
        placed = AppDecision(app, "root.analytics")
        b.bad("null-key-application", S, None, value, r"key", VAL, replay_outcome=Outcome.DECIDED, check=placed)
        value = event("managedcluster.applied", cluster(mc, {}))
        b.bad("null-key-cluster", C, None, value, r"key", VAL, replay_outcome=Outcome.DECIDED)
    value = event("placement.applied", placement("hostile", "k"))
    keys = [("empty", b""), ("kind-only", b"Placement"), ("two-parts", b"Placement/hostile"),
            ("four-parts", b"Placement/hostile/k/extra"), ("empty-namespace", b"Placement//k"),
            ("empty-name", b"Placement/hostile/"), ("lower-case-kind", b"placement/hostile/k"),
            ("unknown-kind", b"Widget/hostile/k"), ("trailing-newline", b"Placement/hostile/k\n"),
            ("leading-space", b" Placement/hostile/k"), ("not-utf-8", b"Placement/hostile/\xff\xfe"),
            ("nul", b"Placement/hostile/k\x00")]  # fmt: skip
    for variant, key in keys:
        b.bad(variant, S, key, value, r"key|utf-8|codec", None if variant == "not-utf-8" else VAL, times=3)
    value = event("managedcluster.applied", cluster("hc1", {}))
    for variant, key in (("empty", b""), ("no-kind", b"hc1"), ("bad-kind", b"Gadget/hc1")):
        b.bad(f"inventory-{variant}", C, key, value, r"key|kind", VAL)
    for variant, key in (("empty", b""), ("two-parts", b"Application"), ("tombstone-bad-key", b"Placement/x")):
        b.bad(f"tombstone-{variant}", S, key, None, r"key", VAL)


def key_mismatch(b: _Builder) -> None:
    """Keys naming another subject or object than the payload does."""

    def applied(namespace: str, name: str) -> dict[str, Any]:
        return event("placement.applied", placement(namespace, name))

    cases: list[tuple[str, TopicRole, str, dict[str, Any]]] = [
        ("namespace", S, "Placement/a/b", applied("c", "b")),
        ("name", S, "Placement/hostile/one", applied("hostile", "other")),
        ("case", S, "Placement/Hostile/p", applied("hostile", "p")),
        ("nfc-key-nfd-name", S, "Placement/hostile/caf\u00e9", applied("hostile", "cafe\u0301")),
        ("application-key-for-placement", S, "Application/default", applied("hostile", "p")),
        ("placement-key-for-application", S, "Placement/hostile/p",
         event("application.submitted", submission("p", "bob", []))),
        ("placementrule-key-for-placement", S, "PlacementRule/hostile/p", applied("hostile", "p")),
        ("cluster", C, "ManagedCluster/hc1", event("managedcluster.applied", cluster("hc2", {}))),
        ("cluster-kind", C, "ManagedClusterSet/hc1", event("managedcluster.applied", cluster("hc1", {}))),
        ("taints", T, "hc1", event("cluster.taints.updated", {"cluster": "hc2", "taints": []})),
    ]  # fmt: skip
    for variant, topic, key, value in cases:
        b.bad(variant, topic, key, value, r"does not match|cannot be sent", VAL, times=6)


def wrong_types(b: _Builder) -> None:
    """Fields of the wrong JSON type or range, which the Kubernetes API server would refuse."""
    p = placement("hostile", "types")
    pk, rk, ak = "Placement/hostile/types", "PlacementRule/hostile/types", "Application/default"

    def spec(**fields: Any) -> dict[str, Any]:
        return event("placement.applied", {**p, "spec": {**p["spec"], **fields}})

    def meta(**fields: Any) -> dict[str, Any]:
        return event("placement.applied", {**p, "metadata": {**p["metadata"], **fields}})

    def rule(**fields: Any) -> dict[str, Any]:
        data = {"apiVersion": "core.hybridapp.io/v1alpha1", "kind": "PlacementRule"}
        return event("placementrule.applied", {**data, "metadata": {"name": "types", "namespace": "hostile"}, **fields})

    def app(**fields: Any) -> dict[str, Any]:
        return event("application.submitted", {**submission("x", "bob", []), **fields})

    score = {"metadata": {"name": "cpu", "namespace": "hc1"}, "status": {"scores": [{"name": "cpu", "value": 2**31}]}}
    cases: list[tuple[str, TopicRole, str, dict[str, Any], str]] = [
        ("labels-as-list", S, pk, meta(labels=["a", "b"]), r"labels"),
        ("label-value-number", S, pk, meta(labels={"a": 1}), r"labels"),
        ("cluster-labels-as-list", C, "ManagedCluster/hc1",
         event("managedcluster.applied", {"metadata": {"name": "hc1", "labels": ["env=prod"]}}), r"labels"),
        ("replicas-as-string", S, rk, rule(spec={"replicas": "two"}), r"replicas"),
        ("replicas-as-list", S, rk, rule(spec={"replicas": [2]}), r"replicas"),
        ("weight-2^31", S, pk, spec(**by_cpu(2**31)), r"weight"),
        ("weight-below-int32", S, pk, spec(**by_cpu(-(2**31) - 1)), r"weight"),
        ("weight-2^63", S, pk, spec(**by_cpu(2**63 - 1)), r"weight"),
        ("weight-fraction", S, pk, spec(**by_cpu(1.5)), r"weight"),
        ("weight-bool-list", S, pk, spec(**by_cpu([True])), r"weight"),
        ("number-of-clusters-word", S, pk, spec(numberOfClusters="many"), r"numberOfClusters"),
        ("cluster-sets-string", S, pk, spec(clusterSets="hostile"), r"clusterSets"),
        ("predicates-object", S, pk, spec(predicates={"requiredClusterSelector": {}}), r"predicates"),
        ("tolerations-string", S, pk, spec(tolerations="all"), r"tolerations"),
        ("spec-list", S, pk, event("placement.applied", {**p, "spec": [p["spec"]]}), r"spec"),
        ("metadata-null", S, pk, event("placement.applied", {**p, "metadata": None}), r"metadata"),
        ("name-empty", S, "Placement/hostile/", meta(name=""), r"name|key"),
        ("application-id-number", S, ak, app(applicationId=12), r"applicationId"),
        ("groups-string", S, ak, app(groups="dev"), r"groups"),
        ("tags-list", S, ak, app(tags=["a"]), r"tags"),
        ("unknown-field-in-submission", S, ak, app(priority=5), r"priority"),
        ("addon-score-2^31", C, "AddOnPlacementScore/hc1/cpu", event("addonplacementscore.applied", score), r"value"),
        ("taints-strings", T, "hc1", event("cluster.taints.updated", {"cluster": "hc1", "taints": ["x"]}), r"taints"),
    ]  # fmt: skip
    for variant, topic, key, value, reason in cases:
        b.bad(variant, topic, key, value, reason, VAL, times=4)


def deep_nesting(b: _Builder) -> None:
    """An unknown field nested hundreds or thousands of levels deep: refused before it reaches any state."""
    for depth, arrays in itertools.product((300, 1000, 5000), (False, True)):
        opening, closing = (b"[", b"]") if arrays else (b'{"deeper":', b"}")
        deep = opening * depth + b"1" + closing * depth
        variant = f"{'arrays' if arrays else 'objects'}-{depth}"
        p = placement("hostile", "deep", {"x-unknown": hole("deep")})
        raw = encode(event("placement.applied", p), deep=deep)
        b.bad(variant, S, "Placement/hostile/deep", raw, r"nest|depth|deep|recursion", DEC, times=2)
        mc = cluster("hc1", {SET_LABEL: "hostile"})
        raw = encode(event("managedcluster.applied", {**mc, "status": {**mc["status"], "x": hole("deep")}}), deep=deep)
        b.bad(f"cluster-{variant}", C, "ManagedCluster/hc1", raw, r"nest|depth|deep|recursion", DEC)
    for depth in (5, 12):  # as deep as upstream objects go: accepted, the unknown field kept
        nested: Any = 1
        for _ in range(depth):
            nested = {"deeper": nested}
        b.placement(f"objects-{depth}", "hostile", {"x-unknown": nested}, ALL)


def huge_labels(b: _Builder) -> None:
    """100,000-entry maps where users put labels: legal, under 1 MiB, and must not take long."""
    b.placement("match-100k-labels", "weird", predicate(labelSelector=labels(**HUGE_LABELS)), frozenset({"huge"}))
    b.placement("placement-100k-labels", "hostile", {}, ALL, labels=HUGE_LABELS)
    exists = [{"key": k, "operator": "Exists"} for k in itertools.islice(HUGE_LABELS, 20_000)]
    b.placement("20k-expressions", "weird", predicate(labelSelector={"matchExpressions": exists}), frozenset({"huge"}))
    b.app("application-100k-tags", "bob", [], "root.analytics", tags=HUGE_LABELS)


def huge_numbers(b: _Builder) -> None:
    """Numbers JSON can spell but no int32 (or double) holds, and words that look like numbers."""
    key, reason = "Placement/hostile/numbers", r"weight|JSON|number|infinit|integer"
    weighted = event("placement.applied", placement("hostile", "numbers", by_cpu(hole("n"))))
    literal = {"1e400": b"1e400", "-1e400": b"-1e400", "2^200": str(2**200).encode(), "2^64": str(2**64).encode(),
               "-2^200": str(-(2**200)).encode(), "NaN": b"NaN", "Infinity": b"Infinity", "-Infinity": b"-Infinity",
               "0x10": b"0x10", "+5": b"+5", "01": b"01", "1_000": b"1_000"}  # fmt: skip
    for variant, text in literal.items():
        b.bad(f"weight-{variant}", S, key, encode(weighted, n=text), reason, None, times=3)
    for word in ("NaN", "Infinity", "-Infinity", "1e400", "9" * 400, "2147483648"):
        value = event("placement.applied", placement("hostile", "numbers", by_cpu(word)))
        b.bad(f"weight-string-{word[:12]}", S, key, value, r"weight", VAL, times=2)
    scores = [{"name": "cpu", "value": hole("n")}]
    score = {"metadata": {"name": "cpu", "namespace": "hc1"}, "status": {"scores": scores}}
    for variant, text in (("1e400", b"1e400"), ("2^200", str(2**200).encode()), ("NaN", b"NaN")):
        raw = encode(event("addonplacementscore.applied", score), n=text)
        b.bad(f"addon-score-{variant}", C, "AddOnPlacementScore/hc1/cpu", raw, r"value|JSON|number|infinit", None)
    good = [("minus-zero", b"-0", None), ("minus-zero-float", b"-0.0", None), ("underflow-1e-400", b"1e-400", None),
            ("int32-max", str(2**31 - 1).encode(), {"hc4"}), ("int32-min", str(-(2**31)).encode(), {"hc1"}),
            ("one", b"1", {"hc4"})]  # fmt: skip  # a weight of 0 ties every cluster: any one may win
    for variant, text, clusters in good:
        for _ in range(3):
            name = b.unique(f"weight-{variant}")
            raw = encode(event("placement.applied", placement("hostile", name, by_cpu(hole("n"), 1))), n=text)
            chosen = None if clusters is None else frozenset(clusters)
            b.placement(f"weight-{variant}", "hostile", {}, chosen, name, raw)


def unicode_oddities(b: _Builder) -> None:
    """Lone surrogates (refused: no UTF-8 form exists), and NUL, bidi overrides, non-NFC forms, emoji (valid JSON
    strings: accepted and decided like any other name)."""
    for variant, escape in (("high", b"\\ud800"), ("low", b"\\udc00"), ("high-then-letter", b"\\ud800\\u0041"),
                            ("reversed-pair", b"\\udc00\\ud800")):  # fmt: skip
        raw = encode(event("placement.applied", placement("hostile", hole("s"))), s=b'"x' + escape + b'"')
        b.bad(f"lone-surrogate-{variant}", S, "Placement/hostile/x", raw, r"surrogate|JSON|unicode|utf", DEC, times=3)
        raw = encode(event("application.submitted", submission("u", hole("s"), [])), s=b'"a' + escape + b'"')
        b.bad(f"lone-surrogate-user-{variant}", S, "Application/default", raw, r"surrogate|JSON|unicode|utf", DEC)
    names = {
        "nul": "nul\u0000name", "rtl-override": "\u202egnp.exe", "bidi-isolates": "a\u2066b\u2069c",
        "nfd": "cafe\u0301", "nfc": "caf\u00e9", "hangul-jamo": "\u1100\u1161", "emoji": "\U0001f984-unicorn",
        "zwj-family": "\U0001f468\u200d\U0001f469\u200d\U0001f467", "bom": "\ufeffbom", "noncharacter": "x\uffff",
        "zero-width": "a\u200bb", "combining-pile": "z" + "\u0301" * 200, "private-use": "\U000f0000",
        "newline": "line\nbreak", "ansi-escape": "\u001b[31mred",
    }  # fmt: skip
    for variant, name in names.items():
        b.placement(f"name-{variant}", "hostile", {}, ALL, name=name)
        b.placement(f"namespace-{variant}", name, {}, NONE, name="p")  # no binding there: decided, no clusters
        b.app(f"user-{variant}", name, [], "root.analytics")
        b.app(f"user-with-groups-{variant}", name, ["dev"], "root.analytics")
        b.app(f"application-id-{variant}", "bob", [], "root.analytics", app=f"app-{name}-{variant}")
        mc = f"w-{variant}-{name}"
        value = event("managedcluster.applied", cluster(mc, {SET_LABEL: "weird", "note": name}))
        b.accepted(f"cluster-{variant}", C, f"ManagedCluster/{mc}", value)
    b.placement("weird-set", "weird", {}, None)


def oversize(b: _Builder) -> None:
    """500 KB names and values (decided), and records whose dead letter must be cut to fit 1 MiB."""
    big = "n" * BIG
    b.placement("500KB-placement-name", "hostile", {}, ALL, name=big)
    b.app("500KB-user", "u" * BIG, [], "root.analytics")
    b.app("500KB-user-with-groups", "u" * BIG, ["dev"])
    b.app("500KB-application-id", "bob", [], "root.analytics", app="a" * BIG + "-id")
    # past cel-go's 100,000 code points an expression does not compile: the placement is Misconfigured
    b.placement("500KB-cel-string", "hostile", cel(f"'{'c' * BIG}'.size() > 0"), NONE)
    value = event("managedcluster.applied", cluster("big-label", {"blob": "v" * BIG}))
    b.accepted("500KB-label-value", C, "ManagedCluster/big-label", value)
    key = f"Placement/hostile/{big}"
    value = event("placement.applied", placement("hostile", "m" * (BIG - 10)))
    b.bad("500KB-name-key-mismatch", S, key, value, r"does not match", VAL)
    value = event("", placement("hostile", big), type="placement.applied.v7")
    b.bad("500KB-name-unknown-version", S, key, value, r"version", VAL)
    value = event("placement.applied", placement("hostile", "too-large", annotations={"blob": "x" * TOO_LARGE_BYTES}))
    b.bad("2MiB-value", S, "Placement/hostile/too-large", value, r"bytes|large|size", DEC)


def wrong_topic(b: _Builder) -> None:
    """Valid events sent to a topic they do not belong on."""
    p = event("placement.applied", placement("hostile", "topic"))
    mc = event("managedcluster.applied", cluster("hc1", {SET_LABEL: "hostile"}))
    pk = "Placement/hostile/topic"
    cases: list[tuple[str, TopicRole, str, dict[str, Any]]] = [
        ("placement-on-cluster-status", C, pk, p),
        ("placement-on-taints", T, "hc1", p),
        ("placement-on-recommendations", R, pk, p),
        ("cluster-on-submissions", S, "ManagedCluster/hc1", mc),
        ("cluster-on-submissions-placement-key", S, pk, mc),
        ("taints-on-cluster-status", C, "ManagedCluster/hc1", event("cluster.taints.updated", {"cluster": "hc1"})),
        ("submission-on-taints", T, "hc1", event("application.submitted", submission("t", "b", []))),
        ("decision-on-submissions", S, pk, event("placement.decided", {"namespace": "hostile", "name": "topic"})),
        ("request-on-recommendations", R, "PlacementRule/hostile/topic", event("candidates.proposed", {})),
        ("recommendation-on-submissions", S, "PlacementRule/hostile/topic", event("recommendation.posted", {})),
    ]
    for variant, topic, key, value in cases:
        b.bad(variant, topic, key, value, r"belong|topic|subject kind|cannot be sent", VAL, times=5)


def regex_queue(b: _Builder) -> None:
    """Submissions whose user or group sends the filters of hostile_queues.yaml into catastrophic backtracking."""
    for n in (24, 32, 40, 48, 64, 100, 1000, 20_000):
        evil = "a" * n + "-"
        b.app(f"user-{n}a-dash", evil, [])
        b.app(f"user-{n}a-dash-groups", evil, ["dev"], "root.analytics")
        b.app(f"group-{n}a-dash", "bob", [evil], "root.analytics")
        b.app(f"user-{n}a", "a" * n, [])
        b.app(f"group-{n}a", "bob", ["a" * n])
        b.app(f"both-{n}a-dash", evil, [evil, "ops"])


def regex_cel(b: _Builder) -> None:
    """CEL regexps that backtrack catastrophically in a backtracking engine; RE2 answers at once."""
    for n in (28, 36, 48):
        evil = "a" * n + "!"
        cases = [
            ("matches", f"'{evil}'.matches('(a+)+$')", NONE),
            ("not-matches", f"!'{evil}'.matches('(a+)+$')", ALL),
            ("find", f"'{evil}'.find('(a+)+$') == ''", ALL),
            ("find-all", f"'{evil}'.findAll('(a+)+$').size() == 0", ALL),
            ("alternation", f"'{evil}'.matches('^(a|aa)+$')", NONE),
            ("label", f"(managedCluster.metadata.labels.env + '{evil}').matches('(a+)+$')", NONE),
            ("label-alternation", f"!(managedCluster.metadata.labels.region + '{evil}').matches('(a|a)+$')", ALL),
            ("plain", f"'{'a' * n}'.matches('(a+)+$')", ALL),
            ("prod", "managedCluster.metadata.labels.env.matches('^(p|pr|pro|prod)+$')", frozenset({"hc1", "hc2"})),
        ]
        for variant, text, clusters in cases:
            b.placement(f"{variant}-{n}", "hostile", cel(text), clusters)


def costly_cel(b: _Builder) -> None:
    """Expressions upstream stops at its cost limit (so: no match), and cheap ones it must still run."""
    big, mid, small = ("[" + ", ".join(map(str, range(n))) + "]" for n in (1000, 300, 30))
    replaces = "'a'" + ".replace('a', 'aaaaaaaaaa')" * 12
    octuple = ".map(s, s + s + s + s + s + s + s + s)"
    runaway = [
        ("nested-exists-1000", f"{big}.exists(x, {big}.exists(y, x * y < 0))"),
        ("nested-all-1000", f"{big}.all(x, {big}.all(y, x + y >= 0))"),
        ("nested-map-1000", f"{big}.map(x, {big}.map(y, x + y)).size() == 0"),
        ("triple-exists-300", f"{mid}.exists(x, {mid}.exists(y, {mid}.exists(z, x + y + z < 0)))"),
        ("replace-chain-12", f"{replaces}.size() < 0"),
        ("replace-chain-12-true", f"{replaces}.size() > 0"),
        ("string-octupling", f"['a']{octuple * 10}[0].size() < 0"),
        ("nested-parentheses-2000", "(" * 2000 + "true" + ")" * 2000),
    ]
    for variant, text in runaway:
        for _ in range(2):
            b.placement(variant, "hostile", cel(text), NONE)
    cheap = [
        ("small-all", "[1, 2, 3].all(x, x > 0)", ALL),
        ("nested-all-30", f"{small}.all(x, {small}.all(y, x + y >= 0))", ALL),
        ("short-replace-chain", "'a'.replace('a', 'aa').replace('a', 'aa').size() == 4", ALL),
        ("claims", f"managedCluster.status.clusterClaims.exists(c, c.name == '{CLAIM}' && c.value == 'AWS')",
         frozenset({"hc1", "hc3"})),
    ]  # fmt: skip
    for variant, text, clusters in cheap:
        for _ in range(2):
            b.placement(variant, "hostile", cel(text), clusters)


CLASSES: dict[str, Callable[[_Builder], None]] = {
    build.__name__.removesuffix("_oddities"): build
    for build in (good, truncated_json, binary_bytes, non_object_json, bad_envelope, unknown_type, unknown_version,
                  bad_key, key_mismatch, wrong_types, deep_nesting, huge_labels, huge_numbers, unicode_oddities,
                  oversize, wrong_topic, regex_queue, regex_cel, costly_cel)
}  # fmt: skip
"""Class name -> builder of its records (the huge-label cluster is built with the baseline)."""


def build_corpus(seed: int = SEED) -> list[HostileRecord]:
    """The baseline inventory, then every class's records shuffled together (seeded)."""
    b = _Builder(random.Random(seed))
    baseline(b)
    head = len(b.records)
    for kind, build in CLASSES.items():
        b.kind = kind
        build(b)
    body = b.records[head:]
    b.rng.shuffle(body)
    records = b.records[:head] + body
    return [replace(r, index=i, time=BASE_TIME + STEP * i, baseline=i < head) for i, r in enumerate(records)]


# --- checks both transports share ------------------------------------------------------------------------------
def letter_problem(record: HostileRecord, stage: str | None, message: str) -> str | None:
    """What is wrong with a dead letter's stage and reason headers, if anything."""
    if stage not in STAGES or (record.stage is not None and stage != record.stage):
        return f"stage {stage!r}, expected {record.stage or sorted(STAGES)} ({message[:200]})"
    if not re.search(record.reason, message, re.IGNORECASE):
        shown = message if len(message) <= 300 else f"{message[:150]}...{message[-120:]}"
        return f"reason {shown!r} ({len(message)} characters) does not match /{record.reason}/"
    return None


def summarise(failures: list[tuple[HostileRecord, str]], total: int) -> str:
    """One line per variant and kind of problem, most frequent first, with the first record's problem as example."""
    groups: dict[tuple[str, str], list[tuple[HostileRecord, str]]] = defaultdict(list)
    for record, problem in failures:
        groups[(record.variant, re.sub(r"\d+", "N", problem)[:80])].append((record, problem))
    lines = [f"{len(failures)} of {total} records wrong:"]
    for found in sorted(groups.values(), key=len, reverse=True)[:30]:
        record, problem = found[0]
        lines.append(f"  {record.label()} and {len(found) - 1} more like it: {problem[:240]}")
    return "\n".join(lines)
