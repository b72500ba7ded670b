"""Soak: the fault-injection run of tests/faults at length, against a broker started here.

`placement-stream run` instances are SIGKILLed at seeded random moments (mid-stream, during start-up, during
restore, under a backlog), restarted with the same static member id, and the broker is stopped with SIGTERM
and SIGKILL in turn and started again on its data dir, while a mixed stream of YuniKorn submissions, OCM
Placements and inventory changes is produced. At the end the committed decisions and dead letters must equal
`placement-stream replay` of exactly what was produced (tests/faults/verdict.py defines lost, duplicated and
differing), and the recovery figures are printed.

    .venv/bin/python -m benchmarks.soak --events 20000 --kills 12 --instances 2 --broker-restarts 2 --seed 1

Exit status 1 when anything was lost, duplicated or differing, or decisions did not flow again within 60 s.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path

from benchmarks.support import print_table
from localbroker.broker import LocalBroker
from localbroker.fetch import ensure_kafka_libs
from localbroker.testing import external_bootstrap
from tests.faults.scenario import Plan, Report, run_plan


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="benchmarks.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=20_000, help="mixed input events (default 20000)")
    parser.add_argument("--kills", type=int, default=12, help="SIGKILLs of instances (default 12)")
    parser.add_argument("--instances", type=int, default=1, help="instances in the group (default 1)")
    parser.add_argument("--broker-restarts", type=int, default=2, help="broker stops, SIGTERM and SIGKILL in turn")
    parser.add_argument("--seed", type=int, default=1, help="seeds the workload and every fault (default 1)")
    parser.add_argument("--partitions", type=int, default=0, help="task partitions (default: 3, or 2 per instance)")
    parser.add_argument("--clusters", type=int, default=30, help="ManagedClusters (default 30)")
    parser.add_argument("--placements", type=int, default=100, help="Placements (default 100)")
    parser.add_argument("--rate", type=float, default=800.0, help="events per second produced (default 800)")
    parser.add_argument("--log-level", default="WARNING", help="the instances' PLACEMENT_LOG_LEVEL (default WARNING)")
    return parser


def plan_of(args: argparse.Namespace) -> Plan:
    """The run the flags describe; with several instances every other kill waits for the others' takeover."""
    return Plan(
        name="soak",
        instances=args.instances,
        partitions=args.partitions or max(3, 2 * args.instances),
        events=args.events,
        kills=args.kills,
        broker_stops=tuple("TERM" if n % 2 == 0 else "KILL" for n in range(args.broker_restarts)),
        seed=args.seed,
        clusters=args.clusters,
        placements=args.placements,
        rate=args.rate,
        late_rejoin=args.instances > 1,
        log_level=args.log_level,
    )


async def _run(plan: Plan, workdir: Path) -> Report:
    external = external_bootstrap()
    if external is not None:
        if plan.broker_stops:
            raise SystemExit("--broker-restarts needs a broker started here: unset KAFKA_BOOTSTRAP_SERVERS")
        return await run_plan(plan, external, workdir)
    broker = LocalBroker(workdir / "broker", ensure_kafka_libs())
    await broker.astart()
    try:
        return await run_plan(plan, broker.bootstrap, workdir, broker)
    finally:
        await broker.astop()


def _seconds(values: list[float | None]) -> list[object]:
    known = [v for v in values if v is not None]
    if not values:
        return [0, "-", "-", "-"]
    median = f"{statistics.median(known):.2f}" if known else "-"
    worst = f"{max(known):.2f}" if known else "-"
    return [len(values), median, worst, sum(1 for v in values if v is None)]


def print_summary(report: Report) -> None:
    """The figures as two tables: recovery times, then the verdict per kind of output."""
    for line in report.lines():
        print(line)
    rows = [
        ["kill -9 + restart -> probes decided", *_seconds(report.recoveries)],
        ["kill -9 -> others decided probes", *_seconds(report.takeovers)],
        ["rejoin -> ready -> probes decided", *_seconds(report.rejoins)],
    ]
    for how in ("TERM", "KILL"):
        flows = [flow for stop, _, flow in report.broker_recoveries if stop == how]
        rows.append([f"broker SIG{how} restart -> probes decided", *_seconds(flows)])
    print()
    print_table("recovery (seconds)", ["after", "count", "p50", "max", "hung"], rows)
    print()
    phases = Counter(kill.split(":", 1)[1] for kill in report.kills)
    print_table("kills by phase found", ["phase", "kills"], sorted(phases.items()))
    print()
    verdict = [[kind, *counts] for kind, counts in report.verdict.by_kind().items()]
    print_table("verdict", ["output", "checked", "lost", "duplicated", "differing"], verdict)


def main(argv: list[str] | None = None) -> int:
    plan = plan_of(_parser().parse_args(argv))
    workdir = Path(tempfile.mkdtemp(prefix="soak-"))
    try:
        report = asyncio.run(_run(plan, workdir))
    except BaseException:
        print(f"instance logs kept in {workdir}", file=sys.stderr)
        raise
    print_summary(report)
    problems = report.problems()
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"instance logs kept in {workdir}", file=sys.stderr)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
