"""The conformance cases, driven as the case format prescribes: every published round's candidates are checked,
then that round's events are delivered in order (inventory, posts, timeout, re-posts, stale posts)."""

from __future__ import annotations

from typing import Any

import pytest
from hybrid_tables import exact, labels, load_table, ratings_by_round, run_script

CASES = load_table("hybrid_conformance.json")


@pytest.mark.parametrize("case", CASES, ids=[f"{c['case']}-{c['title'].replace(' ', '-')}" for c in CASES])
def test_hybrid_conformance_case(case: dict[str, Any]) -> None:
    outcome = run_script(case)
    driver, want = outcome.driver, case["want"]
    state = outcome.state

    assert len(driver.proposals) == want["publications"]
    assert state.round == want["publications"]
    removed = [labels(r.removed) for r in driver.reductions]
    assert [name for group in removed for name in group] == want["removed"]
    per_round: list[list[str]] = [[] for _ in range(state.round)]
    for reduction in driver.reductions:
        per_round[reduction.round - 1] += labels(reduction.removed)
    assert per_round == want["removedPerRound"]
    assert sorted(labels(state.decisions)) == sorted(want["decisions"])
    order = {name: i for i, name in enumerate(labels(state.candidates))}
    if all(d in order for d in labels(state.decisions)):
        assert labels(state.decisions) == sorted(labels(state.decisions), key=order.__getitem__), "J1 order"
    # the last decision event carries the final decisions
    assert sorted(labels(driver.decided_events[-1].decisions)) == sorted(want["decisions"])
    if "ratings" in want:
        assert ratings_by_round(driver) == exact(want["ratings"])
    if "decisionsDuringReduction" in want:
        assert outcome.interim, "the case expects a reduction"
        for held in outcome.interim:
            assert sorted(held) == sorted(want["decisionsDuringReduction"])
    if "decisionsBeforeReposts" in want:
        assert outcome.decisions_before_reposts is not None
        assert sorted(outcome.decisions_before_reposts) == sorted(want["decisionsBeforeReposts"])
    if "candidates" in want:
        assert labels(state.candidates) == want["candidates"]
    if "eliminators" in want:
        assert labels(state.eliminators) == want["eliminators"]


def test_hybrid_conformance_table_is_complete() -> None:
    assert len(CASES) == 18
    assert len({c["case"] for c in CASES}) == 18
