"""Fault injection against real brokers and `placement-stream run` processes: committed decisions must equal
replay's, with none lost, duplicated or differing, whatever was killed and when (see tests/faults/verdict.py
for the definitions). Recovery times are printed (`pytest -s`), bounded only generously.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from localbroker.broker import LocalBroker
from tests.faults.scenario import Plan, Report, run_plan

pytestmark = pytest.mark.integration

PROCESSOR_PLANS = [
    Plan("kill-9", instances=1, partitions=3, events=1500, kills=7, seed=11),
    Plan("group-of-2", instances=2, partitions=4, events=900, kills=3, seed=12, late_rejoin=True),
    Plan("group-of-3", instances=3, partitions=3, events=900, kills=3, seed=13, late_rejoin=True),
]
BROKER_PLANS = [
    Plan("broker-stop", instances=2, partitions=4, events=900, kills=0, broker_stops=("TERM", "KILL"), seed=14),
]


def _check(report: Report) -> None:
    for line in report.lines():
        print(line)
    assert not [kill for kill in report.kills if kill.endswith(":down")], "every kill hit a running process"
    assert len(report.kills) == report.plan.kills
    assert len(report.broker_recoveries) == len(report.plan.broker_stops)
    assert report.verdict.checked["applications"] > 100 and report.verdict.checked["placements"] > 10
    assert report.verdict.checked["dead letters"] > 0
    problems = report.problems()
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("plan", PROCESSOR_PLANS, ids=lambda p: p.name)
async def test_processor_kills_lose_duplicate_and_change_nothing(
    plan: Plan, kafka_bootstrap: str, tmp_path: Path
) -> None:
    _check(await run_plan(plan, kafka_bootstrap, tmp_path))


@pytest.mark.parametrize("plan", BROKER_PLANS, ids=lambda p: p.name)
async def test_broker_stops_lose_duplicate_and_change_nothing(
    plan: Plan, own_broker: LocalBroker, tmp_path: Path
) -> None:
    _check(await run_plan(plan, own_broker.bootstrap, tmp_path, own_broker))
