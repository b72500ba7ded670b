"""Rolling upgrades and rollbacks: the previous release (CHANGELOG.md, installed from the repository's history)
and this checkout in one group, with graceful hand-overs that change a slot's version both ways and SIGKILLs of
either version between them. The committed output must equal replay's: 0 lost, 0 duplicated, 0 differing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.faults.releases import CHANGELOG, install_release, previous_release, recorded_releases
from tests.faults.scenario import Plan, run_plan
from tests.faults.test_fault_runs import _check

pytestmark = pytest.mark.integration


def test_the_changelog_names_the_previous_release_and_its_commit() -> None:
    releases = recorded_releases(CHANGELOG.read_text())
    assert releases and releases[0] == previous_release()
    for release in releases:
        assert len(release.commit) >= 7


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("# Changelog\n## 0.2.0\nno hash here\n", "release 0.2.0 names no commit"),
        ("# Changelog\n## Unreleased\n- x\n", None),
    ],
)
def test_a_release_without_its_commit_is_refused(text: str, error: str | None) -> None:
    if error is None:
        assert recorded_releases(text) == []
    else:
        with pytest.raises(ValueError, match=error):
            recorded_releases(text)


async def test_rolling_upgrade_and_rollback_lose_duplicate_and_change_nothing(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    previous = await asyncio.to_thread(install_release, previous_release())
    plan = Plan("upgrade", instances=2, partitions=4, events=1200, kills=2, seed=21, previous=tuple(previous), swaps=4)
    report = await run_plan(plan, kafka_bootstrap, tmp_path)
    assert report.swaps == [
        "slot 0 -> current",
        "slot 1 -> current",
        "slot 0 -> previous",
        "slot 1 -> previous",
    ]
    _check(report)
