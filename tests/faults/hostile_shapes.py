"""Hostile record classes about the shape of a record: baseline, good records, broken bytes, JSON and envelopes,
unknown types and versions, bad keys and wrong field types."""

from __future__ import annotations

import base64
import gzip
import itertools
from typing import Any

import orjson

from tests.faults.hostile_records import (
    ALL,
    CLAIM,
    DEC,
    HOSTILE_CLUSTERS,
    HUGE_LABELS,
    NONE,
    RANDOM_BLOB_BYTES,
    SET_LABEL,
    VAL,
    AppDecision,
    C,
    Outcome,
    PlacementDecision,
    S,
    T,
    _Builder,
    by_cpu,
    cel,
    cluster,
    event,
    expression,
    labels,
    placement,
    predicate,
    submission,
)
from topics.names import TopicRole


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
