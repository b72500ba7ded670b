"""One fault run from start to verdict: instances up, the workload streamed in bursts with faults at seeded
random points, the end made observable with the barrier placements, then the committed output compared with
replay of exactly what was produced.

Faults: `kill` rounds SIGKILL an instance at a chosen moment (mid-stream; during start-up; during restore;
under a backlog built while it was down) and restart it, and broker stops take the broker down with SIGTERM or
SIGKILL and start it again on the same data dir. After every restart, probe submissions (one per task) are
produced at once and the seconds until all their decisions are visible read_committed are the recovery time.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from localbroker.broker import LocalBroker
from streams.kafka.admin import create_topics
from streams.settings import KafkaSettings, Settings
from tests.faults.chaos import DecisionWatch, Feeder, Replica, kill_broker, restart_broker
from tests.faults.verdict import Verdict, compare, read_committed, replay
from tests.faults.workload import BARRIER_NAMESPACE, Workload
from tests.integration.kafka_support import KafkaWorld
from topics.names import TopicRole

__all__ = ["BOUND_SECONDS", "Plan", "Report", "run_plan"]

BOUND_SECONDS = 60.0
"""Generous bound on any recovery: a hang fails the run; the figures themselves are printed, not asserted."""
SESSION_TIMEOUT_MS = 6000
QUIET_SECONDS = 3.0
KILL_KINDS = ("mid-stream", "start-up", "restore", "backlog")


@dataclass(frozen=True)
class Plan:
    """What one run does; `kills` counts SIGKILLs of instances (a start-up, restore or backlog round uses two)."""

    name: str
    instances: int = 1
    partitions: int = 3
    events: int = 1500
    kills: int = 4
    broker_stops: tuple[str, ...] = ()
    """`TERM` or `KILL` per broker stop, in order (needs a broker this run may stop)."""
    seed: int = 7
    clusters: int = 12
    placements: int = 24
    burst: int = 150
    rate: float = 800.0
    """Events per second the stream is produced at (bursts of `burst`), so faults strike all along it."""
    late_rejoin: bool = False
    """Every other kill leaves the instance down until the others have taken its tasks over."""
    previous: tuple[str, ...] = ()
    """Upgrade runs: the command of the previous release. Every slot starts on it, and `swaps` graceful
    hand-overs each restart one slot on the other version (a rolling upgrade, then a rollback, and so on)."""
    swaps: int = 0
    log_level: str = "WARNING"
    """PLACEMENT_LOG_LEVEL of the instances (their logs are `slot<n>.log` in the run's directory)."""


@dataclass
class Report:
    """What happened and what was found."""

    plan: Plan
    verdict: Verdict = field(default_factory=Verdict)
    kills: list[str] = field(default_factory=list)
    """`<aim>:<phase>` per SIGKILL: what the kill aimed at (stream, start-up, restore, backlog) and the phase the
    instance was found in just before it (see `Replica.phase`)."""
    recoveries: list[float | None] = field(default_factory=list)
    """Seconds from the restart after a kill until every probe's decision was visible (None: not in the bound)."""
    takeovers: list[float | None] = field(default_factory=list)
    """Late rejoins: seconds from a kill until the remaining instances decided every probe."""
    rejoins: list[float | None] = field(default_factory=list)
    """Late rejoins: seconds from the restart until it was ready and every probe produced then was decided."""
    broker_recoveries: list[tuple[str, float, float | None]] = field(default_factory=list)
    """(how, seconds the broker took to start again, seconds from then until every probe was decided)."""
    regressions: list[str] = field(default_factory=list)
    """Barrier placements whose committed answer went back to an older inventory (see DecisionWatch)."""
    exits: list[str] = field(default_factory=list)
    """Instances that ended on their own (exit code, last error); the harness restarted them as a supervisor
    would."""
    swaps: list[str] = field(default_factory=list)
    """Upgrade runs: `slot <n> -> previous|current` per graceful hand-over that changed a slot's version."""
    stop_codes: list[int | None] = field(default_factory=list)
    produced: int = 0
    seconds: float = 0.0
    logs: str = ""
    """The directory with each instance slot's log (`slot<n>.log`)."""
    unstable: list[str] = field(default_factory=list)
    """Output partitions whose last stable offset was behind their end when the verdict read them: a transaction
    still open there hides what follows it from read_committed readers. Shown with a failed verdict, to tell that
    apart from records never written."""

    def problems(self) -> list[str]:
        """Everything that makes the run fail."""
        found = [] if self.verdict.ok() else [self.verdict.details()]
        if found and self.unstable:
            found.append(f"open transactions when read (last stable offset < end): {', '.join(self.unstable)}")
        timings = [*self.recoveries, *self.takeovers, *self.rejoins, *(r[2] for r in self.broker_recoveries)]
        if any(t is None or t > BOUND_SECONDS for t in timings):
            found.append(f"decisions did not flow again within {BOUND_SECONDS:g} s: {timings}")
        if self.regressions:
            found.append(f"decisions went back to older inventory: {self.regressions}")
        if self.exits:
            found.append(f"instances ended on their own: {self.exits}")
        if any(code != 0 for code in self.stop_codes):
            found.append(f"SIGTERM did not end every instance with exit 0: {self.stop_codes}")
        return found

    def lines(self) -> list[str]:
        """The figures, one line each, for `pytest -s` and the soak summary."""

        def seconds(values: list[float | None]) -> str:
            shown = ["hang" if v is None else f"{v:.2f}" for v in values]
            known = [v for v in values if v is not None]
            worst = f" (max {max(known):.2f} s)" if known else ""
            return (" ".join(shown) or "-") + worst

        plan = self.plan
        lines = [
            f"[{plan.name}] {self.produced} records, {plan.instances} instance(s), {plan.partitions} tasks, "
            f"seed {plan.seed}, {self.seconds:.0f} s, logs in {self.logs}",
            f"[{plan.name}] kills {len(self.kills)} at: {', '.join(self.kills) or '-'}",
            f"[{plan.name}] recovery after kill -9 + restart, s: {seconds(self.recoveries)}",
        ]
        if self.takeovers:
            lines.append(f"[{plan.name}] takeover by the others after kill -9, s: {seconds(self.takeovers)}")
            lines.append(
                f"[{plan.name}] rejoin after the takeover (restart -> ready -> probe), s: {seconds(self.rejoins)}"
            )
        if self.swaps:
            lines.append(f"[{plan.name}] graceful version swaps: {', '.join(self.swaps)}")
        if self.unstable:
            lines.append(f"[{plan.name}] open transactions when read: {', '.join(self.unstable)}")
        for how, start, flow in self.broker_recoveries:
            after = "hang" if flow is None else f"{flow:.2f} s"
            lines.append(f"[{plan.name}] broker SIG{how}: restarted in {start:.1f} s, decisions again after {after}")
        if self.regressions:
            lines.append(f"[{plan.name}] answers decided on older inventory than a committed one: {self.regressions}")
        if self.exits:
            lines += [f"[{plan.name}] exited on its own (restarted): {exit}" for exit in self.exits]
        lines.append(f"[{plan.name}] verdict: {self.verdict.summary()}")
        return lines


class _Run:
    def __init__(self, plan: Plan, bootstrap: str, workdir: Path, broker: LocalBroker | None) -> None:
        self.plan, self.bootstrap, self.broker = plan, bootstrap, broker
        self.rng = random.Random(plan.seed)
        self.world = KafkaWorld(bootstrap, plan.partitions)
        self.workload = Workload(plan.seed, plan.partitions, plan.clusters, plan.placements)
        self.queue_config = workdir / "queues.yaml"
        self.queue_config.write_text(self.workload.queue_config())
        kafka = KafkaSettings(
            bootstrap_servers=bootstrap,
            group_id=self.world.group,
            task_partitions=plan.partitions,
            session_timeout_ms=SESSION_TIMEOUT_MS,
        )
        self.settings = Settings(
            kafka=kafka,
            topics=self.world.topics,
            queue_config=self.queue_config,
            resync_seconds=0,
            http_port=0,
            log_level=plan.log_level,
            shutdown_timeout_seconds=15,
        )
        env = self.settings.environment()
        self.replicas = [Replica(env, n, f"{self.world.group}-slot{n}", workdir) for n in range(plan.instances)]
        self.current = self.replicas[0].command
        if plan.previous:
            for replica in self.replicas:
                replica.command = list(plan.previous)
        self.feeder = Feeder(bootstrap, self.world.topics)
        self.watch = DecisionWatch(bootstrap, self.world.topics.decisions)
        self.report = Report(plan, logs=str(workdir))
        self.held: set[int] = set()
        """Slots the harness keeps down on purpose; any other stopped process is restarted."""

    # --- faults -----------------------------------------------------------------------------------
    async def kill(self, replica: Replica, kind: str) -> None:
        self.held.add(replica.slot)
        self.report.kills.append(f"{kind}:{await replica.phase()}")
        await replica.kill()

    async def probe(self, since: float) -> float | None:
        """Produce one probe per task now; seconds from `since` until all are decided."""
        probes = self.workload.probes()
        await self.feeder.send(probes)
        ids = [item.value["data"]["applicationId"] for item in probes if item.value is not None]
        return await self.watch.wait_applications(ids, since, timeout=BOUND_SECONDS + 30)

    async def kill_round(self, kind: str, number: int) -> None:
        rng = self.rng
        victim = rng.choice(self.replicas)
        await self.kill(victim, "stream")
        if kind == "backlog":
            await self.feeder.send(self.workload.stream(self.plan.burst * 4))
        if kind != "mid-stream":
            await victim.start()
            if kind == "start-up":
                await asyncio.sleep(rng.uniform(0.05, 0.5))
            elif kind == "restore":
                await self._until_restoring(victim)
            else:
                await victim.wait_ready(BOUND_SECONDS)
                await asyncio.sleep(rng.uniform(0.0, 0.15))
            await self.kill(victim, kind)
        late = self.plan.late_rejoin and self.plan.instances > 1 and number % 2 == 1
        if late:
            self.report.takeovers.append(await self.probe(time.monotonic()))
        await victim.start()
        self.held.discard(victim.slot)
        if late:  # the others own every task until the rejoin's rebalance: probe once it is through
            await victim.wait_ready(BOUND_SECONDS)
            self.report.rejoins.append(await self.probe(victim.started_at))
        else:
            self.report.recoveries.append(await self.probe(victim.started_at))
            await victim.wait_ready(BOUND_SECONDS)

    async def swap(self, number: int) -> None:
        """A graceful hand-over that changes a slot's version: SIGTERM, then a start on the other release."""
        replica = self.replicas[number % len(self.replicas)]
        self.held.add(replica.slot)
        self.report.stop_codes.append(await replica.stop())
        on_previous = replica.command != self.current
        replica.command = self.current if on_previous else list(self.plan.previous)
        self.report.swaps.append(f"slot {replica.slot} -> {'current' if on_previous else 'previous'}")
        await replica.start()
        self.held.discard(replica.slot)
        self.report.recoveries.append(await self.probe(replica.started_at))
        await replica.wait_ready(BOUND_SECONDS)

    async def _until_restoring(self, replica: Replica) -> None:
        deadline = time.monotonic() + BOUND_SECONDS
        while await replica.phase() in ("start-up", "down") and time.monotonic() < deadline:
            await asyncio.sleep(0.005)

    async def broker_stop(self, how: str) -> None:
        if self.broker is None:
            raise AssertionError("this plan stops the broker: run it against a broker it started itself")
        await kill_broker(self.broker, how)
        await asyncio.sleep(self.rng.uniform(0.5, 2.0))
        took = await restart_broker(self.broker)
        self.report.broker_recoveries.append((how, took, await self.probe(time.monotonic())))

    async def supervise(self) -> None:
        """Restart instances that ended on their own, as an orchestrator would, and note their exit codes."""
        while True:
            for replica in self.replicas:
                if replica.slot not in self.held and await replica.revive():
                    self.report.exits.append(replica.exits[-1])
            await asyncio.sleep(0.25)

    # --- the run ----------------------------------------------------------------------------------
    def schedule(self) -> list[tuple[str, str]]:
        """(fault, kind) in the order they happen: kill rounds until `kills` SIGKILLs, and the broker stops."""
        faults: list[tuple[str, str]] = []
        kinds = list(KILL_KINDS)
        self.rng.shuffle(kinds)
        remaining = self.plan.kills
        while remaining > 0:
            kind = kinds[len(faults) % len(kinds)] if remaining > 1 else "mid-stream"
            faults.append(("kill", kind))
            remaining -= 1 if kind == "mid-stream" else 2
        faults += [("broker", how) for how in self.plan.broker_stops]
        self.rng.shuffle(faults)
        swaps = [("swap", str(number)) for number in range(self.plan.swaps)]
        # the swaps keep their order (upgrade, then rollback...), the kills fall between them
        return [fault for pair in zip(swaps, faults, strict=False) for fault in pair] + (
            swaps[len(faults) :] if len(swaps) > len(faults) else faults[len(swaps) :]
        )

    async def stream(self) -> None:
        faults = self.schedule()
        bursts = max(1, self.plan.events // self.plan.burst)
        if bursts <= len(faults):
            raise AssertionError(f"{len(faults)} faults need more than {bursts} bursts of events: raise the events")
        # the burst after which each fault strikes: one per segment of the stream, at a random point in it
        width = bursts / (len(faults) + 1)
        strike = {int(i * width) + self.rng.randrange(max(1, int(width))): f for i, f in enumerate(faults, start=1)}
        kill_rounds = 0
        for number in range(bursts):
            sent = time.monotonic()
            await self.feeder.send(self.workload.stream(self.plan.burst))
            await asyncio.sleep(max(0.0, self.plan.burst / self.plan.rate - (time.monotonic() - sent)))
            fault = strike.get(number)
            if fault is None:
                continue
            await asyncio.sleep(self.rng.uniform(0.0, 0.3))
            if fault[0] == "kill":
                kill_rounds += 1
                await self.kill_round(fault[1], kill_rounds)
            elif fault[0] == "swap":
                await self.swap(int(fault[1]))
            else:
                await self.broker_stop(fault[1])

    async def unsettled(self) -> str:
        """What is still moving ("" once every instance is ready in a stable group, every barrier placement holds
        the barrier cluster and every submission is committed)."""
        barriers = [f"Placement/{BARRIER_NAMESPACE}/{name}" for name in self.workload.barriers]
        if not self.watch.barrier_passed(barriers):
            return "a barrier placement does not hold the barrier cluster yet"
        ready = [await replica.ready() for replica in self.replicas]
        if not all(ready):
            return f"not every instance is ready: {ready}"
        group = await self.world.group_state()
        if group != ("Stable", len(self.replicas)):
            return f"group is {group}"
        submissions = self.world.topics.submissions
        ends = await self.world.end_offsets(submissions)
        committed = await self.world.committed_offsets(submissions)
        return "" if committed == ends else f"submissions committed {committed}, end offsets {ends}"

    async def drain(self) -> None:
        """Wait until the run has settled and no decision was published for `QUIET_SECONDS`: an instance that took
        a task over may still be catching up with the inventory, and then re-decides."""
        deadline = time.monotonic() + BOUND_SECONDS * 2
        quiet_since, seen = time.monotonic(), -1
        while True:
            moving = await self.unsettled()
            if moving or self.watch.records != seen:
                quiet_since, seen = time.monotonic(), self.watch.records
            elif time.monotonic() - quiet_since >= QUIET_SECONDS:
                return
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"[{self.plan.name}] not settled {BOUND_SECONDS * 2:g} s after the stream: {moving or 'no quiet'};"
                    f" logs in {self.report.logs}"
                )
            await asyncio.sleep(0.2)

    async def unstable(self) -> list[str]:
        """`<topic>-<partition>: <last stable offset> < <end>` for each output partition a transaction holds."""
        topics = self.world.topics
        found: list[str] = []
        for topic, partitions in ((topics.decisions, self.plan.partitions), (topics.dead_letter, 1)):
            stable = await self.world.end_offsets(topic, partitions, isolation="read_committed")
            ends = await self.world.end_offsets(topic, partitions)
            found += [f"{topic}-{p}: {stable[p]} < {end}" for p, end in sorted(ends.items()) if stable[p] < end]
        return found

    async def verdict(self) -> Verdict:
        topics = self.world.topics
        committed = {
            TopicRole.DECISIONS: await read_committed(self.bootstrap, topics.decisions, self.plan.partitions),
            TopicRole.DEAD_LETTER: await read_committed(self.bootstrap, topics.dead_letter, 1),
        }
        replayed = await asyncio.to_thread(replay, self.feeder.sent, self.settings, self.queue_config)
        return compare(committed, replayed)


async def run_plan(plan: Plan, bootstrap: str, workdir: Path, broker: LocalBroker | None = None) -> Report:
    """Run `plan` against the broker at `bootstrap` (`broker`: the one to stop, when the plan stops it)."""
    started = time.monotonic()
    run = _Run(plan, bootstrap, workdir, broker)
    await create_topics(run.settings)
    await run.feeder.start()
    await run.watch.start()
    supervisor: asyncio.Task[None] | None = None
    try:
        await run.feeder.send(run.workload.setup())
        for replica in run.replicas:
            await replica.start()
        for replica in run.replicas:
            await replica.wait_ready(BOUND_SECONDS)
        supervisor = asyncio.create_task(run.supervise())
        await run.stream()
        await run.feeder.send(run.workload.finale())
        await run.drain()
        supervisor.cancel()
        run.report.regressions = list(run.watch.regressions)
        run.report.stop_codes += await asyncio.gather(*(r.stop() for r in run.replicas))
        run.report.produced = len(run.feeder.sent)
        run.report.verdict = await run.verdict()
        run.report.unstable = await run.unstable()
    finally:
        if supervisor is not None:
            supervisor.cancel()
        for replica in run.replicas:
            await replica.kill()
        await run.watch.stop()
        await run.feeder.stop()
    run.report.seconds = time.monotonic() - started
    return run.report
