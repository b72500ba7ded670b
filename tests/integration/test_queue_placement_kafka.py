"""Queue placement (YuniKorn placement rules) end to end on a real Apache Kafka broker.

Submissions go to the submissions topic as `application.submitted` / `application.completed` with key
`Application/<partition>`; every submission gets exactly one `application.placed` or `application.rejected`
on the decisions topic under the same key. A broken reload of the queue configuration file publishes
`queueconfig.rejected` on the decisions topic (key `QueueConfig/<path>`) and keeps the previous rules.
Dynamic queues and active applications live in the partition's state, which survives a restart through
the changelog. Expected results are written out from the spec (docs/queue-placement.md), not computed.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest
from kafka_support import KafkaWorld, Record, event, running, values, wait_for

from engine.queue import QueueEngine
from streams.service import Processor

pytestmark = pytest.mark.integration

POLL = 0.1
"""queue_config_poll_seconds for every processor here."""

CONFIG = Path(__file__).with_name("queue_placement_kafka.yaml").read_text()

# The same default partition, except: the user rule now goes below root.people, and root.dev is gone.
CONFIG_V2 = CONFIG.replace("value: root.users", "value: root.people").replace(
    "          - name: dev\n", "          - name: people\n            parent: true\n"
)

BROKEN = CONFIG.replace("        create: false\n", "        Create: false\n", 1)
"""Keys are case-sensitive (spec C1): `Create` is unknown, on line 5."""

DEFAULT = "Application/default"
GPU = "Application/gpu"


# --- builders -------------------------------------------------------------------------------------
def submitted(
    app: str,
    user: str = "",
    groups: list[str] | None = None,
    queue: str = "",
    partition: str = "default",
    **tags: str,
) -> dict[str, Any]:
    data = {"applicationId": app, "partition": partition, "user": user, "groups": groups or [], "queue": queue}
    return event("application.submitted", {**data, "tags": tags})


def completed(app: str, partition: str = "default") -> dict[str, Any]:
    return event("application.completed", {"applicationId": app, "partition": partition})


def placed(app: str, queue: str, rule: str, created: bool, partition: str = "default") -> dict[str, Any]:
    return {"applicationId": app, "partition": partition, "queue": queue, "rule": rule, "created": created}


def rejected(app: str, reason: str, partition: str = "default") -> dict[str, Any]:
    return {"applicationId": app, "partition": partition, "reason": reason}


def no_match(app: str) -> str:
    return f"failed to place application {app}: application rejected: no placement rule matched"


def write_atomically(path: Path, text: str) -> None:
    """Replace the file in one step, so a poll never reads half a file."""
    scratch = path.with_suffix(".tmp")
    scratch.write_text(text)
    os.replace(scratch, path)


def decisions(records: list[Record]) -> list[tuple[str, str, dict[str, Any]]]:
    """(key, type without version, data) of the application decisions, in topic order per partition."""
    found = []
    for value in values(records):
        kind = value["type"].removesuffix(".v1")
        if kind in ("application.placed", "application.rejected"):
            found.append((value["subject"], kind, value["data"]))
    return found


History = dict[str, list[tuple[str, dict[str, Any]]]]
"""Per record key: (type without version, data) of every application decision, in topic order."""


def per_key(items: list[tuple[str, str, dict[str, Any]]]) -> History:
    grouped: History = {}
    for key, kind, data in items:
        grouped.setdefault(key, []).append((kind, data))
    return grouped


def count_decisions(at_least: int) -> Callable[[list[Record]], bool]:
    return lambda records: len(decisions(records)) >= at_least


async def submit(world: KafkaWorld, items: list[tuple[str, dict[str, Any]]], total: int) -> History:
    """Send (key, event) items to the submissions topic, then read the decisions topic from the start until
    it holds `total` application decisions; returns them all, grouped by key (order across keys is not
    defined: different partitions)."""
    await world.produce([(world.topics.submissions, key, value) for key, value in items])
    records = await world.collect(world.topics.decisions, count_decisions(total))
    found = decisions(records)
    assert len(found) == total, f"expected {total} decisions, got {len(found)}"
    return per_key(found)


def active_sha(processor: Processor) -> str | None:
    runtime = processor.runtime
    config = None if runtime is None else cast(QueueEngine, runtime.engine_for("Application/default")).config
    return getattr(config, "sha256", None)


# --- a) a burst of submissions -----------------------------------------------------------------
# Each row: (key, submission, expected type, expected data), in the order sent. Derived from the spec:
# root grants submit to the group `devs` (and admin to the user `admin`), root.prod to the user `ops`.
HANDWRITTEN: list[tuple[str, dict[str, Any], str, dict[str, Any]]] = [
    # provided, configured leaf, access through root's group ACL (G4, K6)
    (DEFAULT, submitted("a1", "alice", ["devs"], "root.dev"), "application.placed",
     placed("a1", "root.dev", "provided", False)),
    # provided gives nothing (empty request), user rule below the fixed parent creates the leaf (H4, H9, L3)
    (DEFAULT, submitted("a2", "alice", ["devs"]), "application.placed",
     placed("a2", "root.users.alice", "user", True)),
    # the dynamic queue now exists (L6)
    (DEFAULT, submitted("a3", "Alice", ["devs"]), "application.placed",
     placed("a3", "root.users.alice", "user", False)),
    # no submit access anywhere: every rule fails vetting, no root.default (G4-G6)
    (DEFAULT, submitted("a4", "bob", ["other"], "root.prod"), "application.rejected",
     rejected("a4", no_match("a4"))),
    # root.prod's own ACL lets `ops` in (K6)
    (DEFAULT, submitted("a5", "ops", ["other"], "root.prod"), "application.placed",
     placed("a5", "root.prod", "provided", False)),
    # the user rule's deny filter (regexp ^bad) skips it, the trailing fixed rule creates root.overflow (J8, H5)
    (DEFAULT, submitted("a6", "badguy", ["devs"]), "application.placed",
     placed("a6", "root.overflow", "fixed", True)),
    # empty user, not forced (F1)
    (DEFAULT, submitted("a7"), "application.rejected", rejected("a7", "empty user cannot resolve")),
    # the same id with other content (B3)
    (DEFAULT, submitted("a1", "alice", ["devs"], "root.prod"), "application.rejected",
     rejected("a1", "adding application a1 to partition default, but application already existed")),
    # the same id with the same content: the earlier result again (decided item 1)
    (DEFAULT, submitted("a2", "alice", ["devs"]), "application.placed",
     placed("a2", "root.users.alice", "user", True)),
    # dots in a user name become _dot_, paths are lower case (H4, I2, I4)
    (DEFAULT, submitted("a9", "Carol.Smith", ["devs"]), "application.placed",
     placed("a9", "root.users.carol_dot_smith", "user", True)),
    # forced, nothing else passes: the recovery queue (G7, G8, L5)
    (DEFAULT, submitted("a10", "bob", ["other"], **{"application.create.force": "true"}), "application.placed",
     placed("a10", "root.@recovery@", "recovery", True)),
    # `yes` is not a Go ParseBool true: not forced (G7)
    (DEFAULT, submitted("a11", "bob", ["other"], **{"application.create.force": "yes"}), "application.rejected",
     rejected("a11", no_match("a11"))),
    # provided, not fully qualified, missing with create false: no match; then the user rule (H3, H8)
    (DEFAULT, submitted("a12", "alice", ["devs"], "a.b"), "application.placed",
     placed("a12", "root.users.alice", "user", False)),
    # an invalid requested level is a rule error: no later rule is tried (G2, H2)
    (DEFAULT, submitted("a13", "alice", ["devs"], "root.bad!name"), "application.rejected",
     rejected("a13", "failed to place application a13: invalid queue name, max 64 characters consisting of "
              "alphanumeric characters and '-', '_', '#', '@', '/', ':' allowed: 'bad!name'")),
    # the admin ACL on root grants submit too (K6)
    (DEFAULT, submitted("a14", "admin", ["nobody"], "root.prod"), "application.placed",
     placed("a14", "root.prod", "provided", False)),
    # tag rule below a fixed parent, in the second partition (H6, H9)
    (GPU, submitted("g1", "x", [], partition="gpu", namespace="ML"), "application.placed",
     placed("g1", "root.ns.ml", "tag", True, "gpu")),
    (GPU, submitted("g2", "y", [], partition="GPU", namespace="ml"), "application.placed",
     placed("g2", "root.ns.ml", "tag", False, "gpu")),
    # no tag: no rule matches (H6)
    (GPU, submitted("g3", "x", [], partition="gpu"), "application.rejected",
     rejected("g3", no_match("g3"), "gpu")),
    # an unknown partition (A8)
    ("Application/nope", submitted("n1", "x", [], partition="nope"), "application.rejected",
     rejected("n1", "Failed to add application n1 to partition nope, partition doesn't exist", "nope")),
]  # fmt: skip


def generated_burst() -> list[tuple[str, dict[str, Any], str, dict[str, Any]]]:
    """48 more submissions interleaved over both partitions: the first app of each user or namespace
    creates its queue, later ones find it."""
    rows: list[tuple[str, dict[str, Any], str, dict[str, Any]]] = []
    seen: set[str] = set()
    for i in range(48):
        if i % 3 == 2:
            ns = f"team{i % 4}"
            queue = f"root.ns.{ns}"
            row = (GPU, submitted(f"gb{i}", "u", [], partition="gpu", namespace=ns), "tag", "gpu")
        else:
            user = f"u{i % 5}"
            queue = f"root.users.{user}"
            row = (DEFAULT, submitted(f"db{i}", user, ["devs"]), "user", "default")
        key, value, rule, partition = row
        app = value["data"]["applicationId"]
        rows.append((key, value, "application.placed", placed(app, queue, rule, queue not in seen, partition)))
        seen.add(queue)
    return rows


def expect(rows: list[tuple[str, dict[str, Any], str, dict[str, Any]]]) -> History:
    return per_key([(key, kind, data) for key, _, kind, data in rows])


async def test_a_burst_of_submissions_gets_the_spec_decisions_in_order(world: KafkaWorld, tmp_path: Path) -> None:
    config = tmp_path / "queues.yaml"
    config.write_text(CONFIG)
    rows = HANDWRITTEN + generated_burst()
    assert len(rows) >= 60
    async with running(world.settings(queue_config=config, queue_config_poll_seconds=POLL)):
        got = await submit(world, [(key, value) for key, value, _, _ in rows], len(rows))
        records = await world.collect(world.topics.decisions, count_decisions(len(rows)))
    assert got == expect(rows)
    for record in records:
        value = values([record])[0]
        assert record.key is not None and record.key.decode() == value["subject"]
        assert dict(record.headers)["content-type"].startswith(b"application/cloudevents+json")


# --- b) reload ------------------------------------------------------------------------------------
async def test_a_broken_reload_keeps_the_old_rules_and_a_valid_one_takes_effect(
    world: KafkaWorld, tmp_path: Path
) -> None:
    config = tmp_path / "queues.yaml"
    config.write_text(CONFIG)
    topics = world.topics
    async with running(world.settings(queue_config=config, queue_config_poll_seconds=POLL)) as processor:
        history = [
            ("application.placed", placed("r1", "root.dev", "provided", False)),
            ("application.placed", placed("r2", "root.users.dave", "user", True)),
        ]
        got = await submit(
            world,
            [
                (DEFAULT, submitted("r1", "alice", ["devs"], "root.dev")),
                (DEFAULT, submitted("r2", "dave", ["devs"])),
            ],
            total=2,
        )
        assert got == {DEFAULT: history}
        original = active_sha(processor)
        assert original == hashlib.sha256(CONFIG.encode()).hexdigest()

        write_atomically(config, BROKEN)
        records = await world.collect(topics.decisions, lambda r: bool(values(r, "queueconfig.rejected.v1")))
        notice = values(records, "queueconfig.rejected.v1")
        assert len(notice) == 1
        assert notice[0]["subject"] == f"QueueConfig/{config}"
        assert notice[0]["data"]["path"] == str(config)
        assert notice[0]["data"]["sha256"] == hashlib.sha256(BROKEN.encode()).hexdigest()
        assert notice[0]["data"]["error"] == "unknown key Create in placement rule (line 5)"
        assert active_sha(processor) == original

        # the old rules still place (under v2 erin would go below root.people)
        await asyncio.sleep(POLL * 5)  # several polls of the same broken content
        history.append(("application.placed", placed("r3", "root.users.erin", "user", True)))
        got = await submit(world, [(DEFAULT, submitted("r3", "erin", ["devs"]))], total=3)
        assert got == {DEFAULT: history}

        write_atomically(config, CONFIG_V2)
        await wait_for(lambda: active_sha(processor) == hashlib.sha256(CONFIG_V2.encode()).hexdigest())
        got = await submit(
            world,
            [
                # root.dev left the file but still holds r1: draining, so vetting skips it (N3, G4)
                (DEFAULT, submitted("r4", "alice", ["devs"], "root.dev")),
                # the user rule now goes below root.people; root.users.dave is dynamic and stays (N2)
                (DEFAULT, submitted("r5", "frank", ["devs"])),
                (DEFAULT, submitted("r6", "dave", ["devs"], "root.users.dave")),
                (DEFAULT, completed("r1")),
                # root.dev was deleted with its last application (M2): provided finds nothing now
                (DEFAULT, submitted("r7", "alice", ["devs"], "root.dev")),
            ],
            total=7,
        )
        records = await world.collect(topics.decisions, count_decisions(7))
    history += [
        ("application.placed", placed("r4", "root.people.alice", "user", True)),
        ("application.placed", placed("r5", "root.people.frank", "user", True)),
        ("application.placed", placed("r6", "root.users.dave", "provided", False)),
        ("application.placed", placed("r7", "root.people.alice", "user", False)),
    ]
    assert got == {DEFAULT: history}
    assert len(values(records, "queueconfig.rejected.v1")) == 1, "the same broken content is reported once"


def test_the_reload_fixtures_are_what_the_tests_say() -> None:
    """Guards the string edits above: v2 differs where intended, the broken file only by one key."""
    assert "root.people" in CONFIG_V2 and "name: dev\n" not in CONFIG_V2
    assert BROKEN.count("Create:") == 1 and BROKEN.splitlines()[4] == "        Create: false"


# --- c) restart -----------------------------------------------------------------------------------
async def test_dynamic_queues_and_their_cleanup_survive_restarts(world: KafkaWorld, tmp_path: Path) -> None:
    config = tmp_path / "queues.yaml"
    config.write_text(CONFIG)
    settings = world.settings(queue_config=config, queue_config_poll_seconds=POLL)
    placed_ = "application.placed"

    async with running(settings) as processor:
        got = await submit(
            world,
            [
                (DEFAULT, submitted("c1", "dave", ["devs"])),
                (DEFAULT, completed("c1")),  # its last app left: root.users.dave is deleted (M2)
                (DEFAULT, submitted("c2", "dave", ["devs"])),  # so it is created again (M4)
                (GPU, submitted("k1", "x", [], partition="gpu", namespace="ml")),
            ],
            total=3,
        )
        assert processor.runtime is not None and DEFAULT in processor.runtime.states
    default = [
        (placed_, placed("c1", "root.users.dave", "user", True)),
        (placed_, placed("c2", "root.users.dave", "user", True)),
    ]
    gpu = [(placed_, placed("k1", "root.ns.ml", "tag", True, "gpu"))]
    assert got == {DEFAULT: default, GPU: gpu}

    async with running(settings):  # a new instance on the same group: state from the changelog
        got = await submit(
            world,
            [
                (DEFAULT, submitted("c3", "dave", ["devs"])),
                (DEFAULT, submitted("c2", "dave", ["devs"])),  # re-delivered: the same answer (decided item 1)
                (DEFAULT, submitted("c2", "dave", ["ops"])),  # same id, other content (B3)
                (GPU, submitted("k2", "x", [], partition="gpu", namespace="ml")),
                (DEFAULT, completed("c2")),
                (DEFAULT, completed("c3")),  # root.users.dave is empty again and goes
                (GPU, completed("k1", "gpu")),
                (GPU, completed("k2", "gpu")),
            ],
            total=7,
        )
    default += [
        (placed_, placed("c3", "root.users.dave", "user", False)),
        (placed_, placed("c2", "root.users.dave", "user", True)),
        ("application.rejected",
         rejected("c2", "adding application c2 to partition default, but application already existed")),
    ]  # fmt: skip
    gpu += [(placed_, placed("k2", "root.ns.ml", "tag", False, "gpu"))]
    assert got == {DEFAULT: default, GPU: gpu}

    async with running(settings) as processor:
        # both partitions emptied: their state was dropped, and the changelog says so (tombstones)
        assert processor.runtime is not None
        assert DEFAULT not in processor.runtime.states and GPU not in processor.runtime.states
        got = await submit(
            world,
            [
                (DEFAULT, submitted("c4", "dave", ["devs"])),
                (GPU, submitted("k3", "x", [], partition="gpu", namespace="ml")),
                (DEFAULT, submitted("c3", "dave", ["devs"])),  # completed before the restart: a new app
            ],
            total=10,
        )
    default += [
        (placed_, placed("c4", "root.users.dave", "user", True)),
        (placed_, placed("c3", "root.users.dave", "user", False)),
    ]
    gpu += [(placed_, placed("k3", "root.ns.ml", "tag", True, "gpu"))]
    assert got == {DEFAULT: default, GPU: gpu}
    changelog = await world.collect(world.topics.changelog, lambda r: any(x.value is None for x in r))
    tombstoned = {r.key.decode() for r in changelog if r.value is None and r.key is not None}
    assert {DEFAULT, GPU} <= tombstoned
