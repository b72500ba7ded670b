"""Hybrid PlacementRules end to end on a real broker: the processor and the advisors as separate processes.

The rule is the public documentation's worked example (shared/seeds, spec resolution in
tests/engine/hybrid/test_hybrid_seed_example.py): three clusters, `grc` (predicate), `rhacm` (priority, weight 60)
and `cost` (priority, weight 50), replicas 1. `grc` is the shipped veto advisor vetoing cluster2; `rhacm` and
`cost` are the scripted `advisors.fixed_scores` program posting the documentation's recommendations.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from kafka_support import KafkaWorld, Record, event, free_port, http_get, running, values

from advisors.common import encode_recommendation
from topics.names import TOPIC_SPECS, TopicRole
from topics.placementrule import RecommendationEntry, RecommendationPosted, RuleRef

pytestmark = pytest.mark.integration

RULE_KEY = "PlacementRule/apps/doc"
CLUSTERS = ("cluster1", "cluster2", "cluster3")
SEED_ADVISORS = [
    {"name": "grc", "type": "predicate", "rules": {"policies": [{"name": None}]}},
    {"name": "rhacm", "type": "priority", "weight": 60, "rules": {"resourceHint": {"type": "cpu"}}},
    {"name": "cost", "type": "priority", "weight": 50},
]
# what each advisor of the worked example answers, as command-line arguments of the advisor programs
GRC = ("veto", "grc", ["cluster2"])  # accepts cluster1 and cluster3 while they are candidates
RHACM = ("fixed_scores", "rhacm", ["cluster3"])
COST = ("fixed_scores", "cost", ["1:cluster2", "2:cluster1", "3:cluster3"])


def rule_event(*, decisions: Sequence[str] = (), advisors: Sequence[dict[str, Any]] = SEED_ADVISORS) -> dict[str, Any]:
    """The documentation's rule; `decisions` are the ones a previous evaluation left in its status."""
    data: dict[str, Any] = {
        "apiVersion": "core.hybridapp.io/v1alpha1",
        "kind": "PlacementRule",
        "metadata": {"name": "doc", "namespace": "apps", "generation": 1},
        "spec": {"replicas": 1, "advisors": list(advisors)},
    }
    if decisions:
        data["status"] = {"decisions": [{"name": n} for n in decisions]}
    return event("placementrule.applied", data)


def names(refs: Sequence[dict[str, Any]]) -> list[str]:
    return [r["name"] for r in refs]


def instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


class Programs:
    """The processor and advisor subprocesses of one test, each logging to its own file; all stopped at the end."""

    def __init__(self, world: KafkaWorld, workdir: Path) -> None:
        self.world = world
        self.workdir = workdir
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.ports: dict[str, int] = {}
        suffix = TOPIC_SPECS[TopicRole.ADVISOR_REQUESTS].default_name
        self.topic_prefix = world.topics.advisor_requests.removesuffix(suffix)

    def _start(self, label: str, args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        with (self.workdir / f"{label}.log").open("ab") as log:
            proc = subprocess.Popen(args, env=env, cwd=self.workdir, stdout=log, stderr=log)
        self.procs[label] = proc
        return proc

    async def processor(self, label: str, **env: str) -> int:
        """Start `python -m streams run` and wait for /readyz; returns its HTTP port."""
        port = free_port()
        full = {**os.environ, **self.world.env(PLACEMENT_HTTP_PORT=str(port), **env)}
        proc = self._start(label, [sys.executable, "-m", "streams", "run"], full)
        self.ports[label] = port
        deadline = time.monotonic() + 90
        while (await http_get(f"http://127.0.0.1:{port}/readyz"))[0] != 200:
            assert proc.poll() is None, f"{label} exited with {proc.returncode}:\n{self.log(label)}"
            assert time.monotonic() < deadline, f"{label} not ready in 90 s:\n{self.log(label)}"
            await asyncio.sleep(0.2)
        return port

    async def advisor(self, spec: tuple[str, str, list[str]]) -> subprocess.Popen[bytes]:
        """Start an advisor program (`advisors.<module> --name NAME ARGS...`) and wait until it serves requests."""
        module, name, args = spec
        command = [sys.executable, "-m", f"advisors.{module}", "--bootstrap", self.world.bootstrap, "--name", name]
        command += ["--topic-prefix", self.topic_prefix, "--group", f"{self.world.group}-advisor-{name}", *args]
        proc = self._start(f"advisor-{name}", command, {**os.environ})
        deadline = time.monotonic() + 60
        while "answering requests" not in self.log(f"advisor-{name}"):
            assert proc.poll() is None, f"advisor {name} exited with {proc.returncode}:\n{self.log(f'advisor-{name}')}"
            assert time.monotonic() < deadline, f"advisor {name} did not start:\n{self.log(f'advisor-{name}')}"
            await asyncio.sleep(0.1)
        return proc

    def kill(self, label: str) -> None:
        proc = self.procs[label]
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)

    async def consumed(self, label: str, topic: str, count: int) -> None:
        """Wait until the processor's metrics count `count` records consumed from `topic`."""
        pattern = re.compile(rf'placement_records_consumed_total\{{topic="{re.escape(topic)}"\}} ([0-9.]+)')
        deadline = time.monotonic() + 30
        while True:
            _, text = await http_get(f"http://127.0.0.1:{self.ports[label]}/metrics")
            found = pattern.search(text)
            if found and float(found.group(1)) >= count:
                return
            assert time.monotonic() < deadline, f"{label} consumed fewer than {count} records of {topic}"
            await asyncio.sleep(0.1)

    def log(self, label: str) -> str:
        path = self.workdir / f"{label}.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def logs(self) -> str:
        return "\n".join(f"--- {label}\n{self.log(label)}" for label in self.procs)

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


@pytest.fixture
def programs(world: KafkaWorld, tmp_path: Path) -> Iterator[Programs]:
    started = Programs(world, tmp_path)
    try:
        yield started
    finally:
        started.stop_all()


async def publish_inventory(world: KafkaWorld, programs: Programs, label: str) -> None:
    """The three clusters, applied by the processor before the rule arrives (so round 1 has all of them)."""
    topic = world.topics.cluster_status
    await world.produce(
        [(topic, f"ManagedCluster/{n}", event("managedcluster.applied", {"metadata": {"name": n}})) for n in CLUSTERS]
    )
    await programs.consumed(label, topic, len(CLUSTERS))


def proposals(records: Sequence[Record]) -> list[dict[str, Any]]:
    """`candidates.proposed` data of the rule, in publication order."""
    return [v["data"] for v in values([r for r in records if r.key == RULE_KEY.encode()], "candidates.proposed.v1")]


def rule_decisions(records: Sequence[Record]) -> list[dict[str, Any]]:
    """`placementrule.decided` events of the rule, in publication order."""
    return values([r for r in records if r.key == RULE_KEY.encode()], "placementrule.decided.v1")


def last_state(records: Sequence[Record]) -> dict[str, Any] | None:
    """The rule's latest changelog state."""
    mine = [r for r in records if r.key == RULE_KEY.encode() and r.value is not None]
    return orjson.loads(mine[-1].value)["state"] if mine else None


def settled_in(round_number: int) -> Callable[[list[Record]], bool]:
    """Changelog condition: the rule is in `round_number`, every advisor answered, and no deadline is armed."""

    def done(records: list[Record]) -> bool:
        state = last_state(records)
        return (
            state is not None
            and state["round"] == round_number
            and "deadline" not in state
            and set(state["recommendations"]) == {"grc", "rhacm", "cost"}
        )

    return done


def ratings(reduction: dict[str, Any]) -> dict[str, int]:
    """The exact ratings (hundredths, H3) of the changelog's latest reduction by candidate name."""
    return {r["ref"]["name"]: r["hundredths"] for r in reduction["ratings"]}


def post(round_number: int, advisor: str, entries: Sequence[str]) -> tuple[str, bytes]:
    """A `recommendation.posted` record as an advisor would send it: key and CloudEvent bytes."""
    posted = RecommendationPosted(
        rule=RuleRef(namespace="apps", name="doc"),
        round=round_number,
        advisor=advisor,
        recommendations=[RecommendationEntry(kind="ManagedCluster", name=n) for n in entries],
    )
    key, value = encode_recommendation(posted, "/tests", datetime.now(UTC))
    return key.decode(), value


async def test_seed_worked_example_with_advisor_processes_decides_cluster3(
    world: KafkaWorld, programs: Programs
) -> None:
    topics = world.topics
    await programs.processor("processor", PLACEMENT_ADVISOR_TIMEOUT_SECONDS="120")
    for spec in (GRC, RHACM, COST):
        await programs.advisor(spec)
    await publish_inventory(world, programs, "processor")
    await world.produce([(topics.submissions, RULE_KEY, rule_event(decisions=["cluster3"]))])

    changelog = await world.collect(topics.changelog, settled_in(3), timeout=90)
    requests = await world.collect(topics.advisor_requests, lambda r: len(proposals(r)) >= 3)
    decisions = await world.collect(topics.decisions, lambda r: len(rule_decisions(r)) >= 1)
    posts = await world.collect(topics.advisor_recommendations, lambda r: len(r) >= 9)

    # the rounds seen by the advisors: cluster2 vetoed by grc in round 1, cluster1 rated out in round 2
    rounds = proposals(requests)
    assert [p["round"] for p in rounds] == [1, 2, 3], programs.logs()
    assert [names(p["candidates"]) for p in rounds] == [list(CLUSTERS), ["cluster1", "cluster3"], ["cluster3"]]
    assert all(p["advisors"] == ["grc", "rhacm", "cost"] for p in rounds)
    assert [(a["name"], a["type"], a["weight"]) for a in rounds[0]["advisorSpecs"]] == [
        ("grc", "predicate", 100),
        ("rhacm", "priority", 60),
        ("cost", "priority", 50),
    ]
    assert all(names(p["status"]["decisions"]) == ["cluster3"] for p in rounds), "decisions never change mid-way"

    # every advisor process answered every round, with the recommendations of the example
    answered = {}
    for value in values(posts, "recommendation.posted.v1"):
        data = value["data"]
        answered[(data["advisor"], data["round"])] = names(data["recommendations"])
    assert answered == {
        ("grc", 1): ["cluster1", "cluster3"],
        ("rhacm", 1): ["cluster3"],
        ("cost", 1): ["cluster2"],
        ("grc", 2): ["cluster1", "cluster3"],
        ("rhacm", 2): ["cluster3"],
        ("cost", 2): ["cluster1"],
        ("grc", 3): ["cluster3"],
        ("rhacm", 3): ["cluster3"],
        ("cost", 3): ["cluster3"],
    }

    # the reductions as the spec resolves the example: cluster1 = 50 (cost), cluster3 = 60 + 100 (decisionWeight)
    state = last_state(changelog)
    assert state is not None
    assert names(state["candidates"]) == ["cluster3"]
    assert names(state["eliminators"]) == ["cluster2", "cluster1"]
    assert names(state["decisions"]) == ["cluster3"]
    assert state["reductions"] == [{"round": 1, "removed": ["cluster2"]}, {"round": 2, "removed": ["cluster1"]}]
    rating = state["lastReduction"]  # the latest reduction whole, earlier ones as round and names (H6)
    assert (rating["round"], rating["reason"], names(rating["removed"])) == (2, "rating", ["cluster1"])
    assert ratings(rating) == {"cluster1": 5000, "cluster3": 16000}
    predicate = rounds[1]["status"]["lastReduction"]
    assert (predicate["round"], predicate["reason"], names(predicate["removed"])) == (1, "predicate", ["cluster2"])
    assert not predicate["forced"] and not rating["forced"], "no round ran into the advisor timeout"

    # the decision was cluster3 from the start and stayed so: one event, never a change
    decided = rule_decisions(decisions)
    assert [names(d["data"]["decisions"]) for d in decided] == [["cluster3"]]
    assert decided[-1]["subject"] == RULE_KEY


async def test_silent_advisor_abstains_after_the_timeout(world: KafkaWorld, programs: Programs) -> None:
    topics = world.topics
    timeout = 8.0
    await programs.processor("processor", PLACEMENT_ADVISOR_TIMEOUT_SECONDS=str(timeout))
    # grc would veto cluster1, but it is down: killed before the rule arrives
    await programs.advisor(("veto", "grc", ["cluster1"]))
    programs.kill("advisor-grc")
    await programs.advisor(("fixed_scores", "rhacm", ["cluster1"]))
    await programs.advisor(("fixed_scores", "cost", ["cluster2"]))
    await publish_inventory(world, programs, "processor")
    await world.produce([(topics.submissions, RULE_KEY, rule_event())])

    decisions = await world.collect(
        topics.decisions, lambda r: any(d["data"]["decisions"] for d in rule_decisions(r)), timeout=60
    )
    requests = await world.collect(topics.advisor_requests, lambda r: len(proposals(r)) >= 1)
    posts = await world.collect(topics.advisor_recommendations, lambda r: len(r) >= 2)

    first, final = rule_decisions(decisions)[0], rule_decisions(decisions)[-1]
    assert len(rule_decisions(decisions)) == 2, programs.logs()
    assert first["data"]["decisions"] == [] and first["data"]["round"] == 1, "first evaluation: nothing yet"

    # only the answering advisors count: no veto from grc, ratings cluster1 = 60, cluster2 = 50, cluster3 = 0
    data = final["data"]
    assert names(data["decisions"]) == ["cluster1"]
    assert data["round"] == 1, "forced finalisation publishes no new round (I2)"
    assert set(data["recommendations"]) == {"rhacm", "cost"}
    assert names(data["eliminators"]) == ["cluster3", "cluster2"]
    assert data["reductions"] == [{"round": 1, "removed": ["cluster3"]}, {"round": 1, "removed": ["cluster2"]}]
    last = data["lastReduction"]
    assert (last["round"], last["reason"], last["forced"], names(last["removed"])) == (1, "rating", True, ["cluster2"])
    last_ratings = {r["candidate"]["name"]: r["hundredths"] for r in last["ratings"]}
    assert last_ratings == {"cluster1": 6000, "cluster2": 5000}
    assert [p["round"] for p in proposals(requests)] == [1]

    # not before the timeout, although both running advisors had answered well before it
    proposal = next(r for r in requests if r.key == RULE_KEY.encode())
    round_started = instant(proposals(requests)[0]["status"]["lastUpdateTime"])
    assert instant(final["time"]) >= round_started + timedelta(seconds=timeout)
    decided_record = [r for r in decisions if r.key == RULE_KEY.encode()][-1]
    assert decided_record.timestamp - proposal.timestamp >= timeout * 1000 - 500
    answered = {orjson.loads(r.value)["data"]["advisor"]: r.timestamp for r in posts if r.value is not None}
    assert set(answered) == {"rhacm", "cost"}
    assert all(ts < proposal.timestamp + timeout * 1000 for ts in answered.values()), "posts came in time"
    assert decided_record.timestamp >= max(answered.values()) + 1000, "the processor waited for grc"


async def test_killed_processor_resumes_the_round_it_published(world: KafkaWorld, programs: Programs) -> None:
    topics = world.topics
    await programs.processor("processor-1", PLACEMENT_ADVISOR_TIMEOUT_SECONDS="120")
    await publish_inventory(world, programs, "processor-1")
    await world.produce([(topics.submissions, RULE_KEY, rule_event())])  # no earlier decision this time

    await world.collect(topics.advisor_requests, lambda r: len(proposals(r)) >= 1)
    # round 1 answered by hand (the example's answers): grc vetoes cluster2, so round 2 is published
    await world.produce(
        [
            (topics.advisor_recommendations, *post(1, "grc", ["cluster1", "cluster3"])),
            (topics.advisor_recommendations, *post(1, "rhacm", ["cluster3"])),
            (topics.advisor_recommendations, *post(1, "cost", ["cluster2"])),
        ]
    )
    before = await world.collect(topics.advisor_requests, lambda r: len(proposals(r)) >= 2)
    programs.kill("processor-1")  # round 2 is out, nobody has answered it
    published = proposals(before)
    assert [p["round"] for p in published] == [1, 2]
    assert names(published[1]["candidates"]) == ["cluster1", "cluster3"]

    await programs.processor("processor-2", PLACEMENT_ADVISOR_TIMEOUT_SECONDS="120")
    for spec in (GRC, RHACM, COST):
        await programs.advisor(spec)  # they also see the round-1 request again; their late round-1 posts are dropped

    decisions = await world.collect(
        topics.decisions, lambda r: any(d["data"]["decisions"] for d in rule_decisions(r)), timeout=90
    )
    await asyncio.sleep(1.0)  # anything published after the decision would show up below
    requests = await world.collect(topics.advisor_requests, lambda r: len(proposals(r)) >= 3)
    posts = await world.collect(topics.advisor_recommendations, lambda r: len(r) >= 3 + 3 * 3)

    rounds = proposals(requests)
    assert [p["round"] for p in rounds] == [1, 2, 3], "the new processor neither restarted nor re-published round 2"
    assert rounds[:2] == published, "same candidates and status as before the kill"
    assert names(rounds[2]["candidates"]) == ["cluster3"]

    decided = rule_decisions(decisions)
    assert [names(d["data"]["decisions"]) for d in decided] == [[], ["cluster3"]], programs.logs()
    final = decided[-1]["data"]
    assert final["round"] == 3
    assert names(final["eliminators"]) == ["cluster2", "cluster1"]
    assert final["reductions"] == [{"round": 1, "removed": ["cluster2"]}, {"round": 2, "removed": ["cluster1"]}]
    last = final["lastReduction"]
    assert (last["round"], last["reason"], last["forced"], names(last["removed"])) == (2, "rating", False, ["cluster1"])
    # without an earlier decision: cluster1 = 50 (cost), cluster3 = 60 (rhacm)
    assert {r["candidate"]["name"]: r["hundredths"] for r in last["ratings"]} == {
        "cluster1": 5000,
        "cluster3": 6000,
    }
    assert set(final["recommendations"]) == {"grc", "rhacm", "cost"}
    # the advisor processes answered the old round-1 request too; those posts came too late to matter (E1)
    sent = {(v["source"], v["data"]["round"]) for v in values(posts, "recommendation.posted.v1")}
    assert {("/tests", 1), ("/advisors/grc", 1), ("/advisors/grc", 2), ("/advisors/cost", 3)} <= sent
    assert final["recommendations"]["cost"] == [
        {"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster", "name": "cluster3"}
    ], "round 3's answer, from the advisor process"


async def test_rules_without_advisors_over_1000_clusters_are_decided_asking_nobody(world: KafkaWorld) -> None:
    """A rule without advisors is reduced to its decision in one evaluation, publishing no rounds (H6); its
    decision and status fit a Kafka record. A small rule next to it is decided as well."""
    topics = world.topics
    fleet = [f"hf-{i:04d}" for i in range(1000)]
    labelled = {"fleet": "yes"}
    rules = {
        "PlacementRule/apps/fleet": {"replicas": 1, "targetLabels": {"matchLabels": labelled}},
        "PlacementRule/apps/canary": {"replicas": 2, "targets": [{"name": "hf-0001"}, {"name": "hf-0002"}]},
    }
    async with running(world.settings()) as processor:
        clusters = [{"metadata": {"name": n, "labels": labelled}} for n in fleet]
        applied_clusters = [event("managedcluster.applied", data) for data in clusters]
        await world.produce(
            [
                (topics.cluster_status, f"ManagedCluster/{n}", value)
                for n, value in zip(fleet, applied_clusters, strict=True)
            ]
        )
        applied = []
        for key, spec in rules.items():
            _, namespace, name = key.split("/")
            data = {"metadata": {"name": name, "namespace": namespace, "generation": 1}, "spec": spec}
            applied.append((topics.submissions, key, event("placementrule.applied", data)))
        await world.produce(applied)

        def last(records: Sequence[Record], key: str) -> dict[str, Any] | None:
            found = values([r for r in records if r.key == key.encode()], "placementrule.decided.v1")
            return found[-1]["data"] if found else None

        def decided(records: list[Record]) -> bool:
            fleet_rule, canary = (last(records, key) for key in rules)
            return bool(fleet_rule and fleet_rule["round"] == len(fleet) and canary and canary["decisions"])

        records = await world.collect(topics.decisions, decided, timeout=120)
        produced = {
            topic: processor.metrics.registry.get_sample_value("placement_records_produced_total", {"topic": topic})
            for topic in (topics.decisions, topics.advisor_requests)
        }
    assert produced[topics.decisions], "the processor counts what it produces"
    assert not produced[topics.advisor_requests], "nobody is asked: no candidates.proposed was written"
    fleet_rule, canary = (last(records, key) for key in rules)
    assert fleet_rule is not None and canary is not None
    assert names(fleet_rule["decisions"]) == ["hf-0999"], "ratings all 0: the last candidate by key stays (H7)"
    assert len(fleet_rule["reductions"]) == len(fleet) - 1 and fleet_rule["lastReduction"]["round"] == 999
    assert names(canary["decisions"]) == ["hf-0001", "hf-0002"]
    assert max(len(r.value or b"") for r in records) < 1024 * 1024
