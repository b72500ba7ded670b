"""The conformance cases, driven as the case format prescribes: every published round's candidates are checked,
then that round's events are delivered in order (inventory, posts, timeout, re-posts, stale posts)."""

from __future__ import annotations

from typing import Any

import pytest
from hybrid_tables import exact, labels, load_table, ratings_by_round, run_script, snapshot_of

CASES = load_table("hybrid_conformance.json")


@pytest.mark.parametrize("case", CASES, ids=[f"{c['case']}-{c['title'].replace(' ', '-')}" for c in CASES])
def test_hybrid_conformance_case(case: dict[str, Any]) -> None:
    outcome = run_script(case)
    driver, want = outcome.driver, case["want"]
    state = outcome.state
    asks = bool(case["spec"].get("advisors"))

    assert state.round == want["rounds"]
    if asks:
        assert len(driver.proposals) == want["rounds"], "one publication per round"
        removals = [(r.round, list(r.removed)) for r in driver.reductions]
    else:  # rounds and removals from the last decision's status snapshot (H6)
        assert driver.proposals == []
        snapshot = snapshot_of(driver)
        assert snapshot.round == want["rounds"]
        removals = [(r.round, r.removed) for r in snapshot.reductions]
    assert [name for _, names in removals for name in names] == want["removed"]
    per_round: list[list[str]] = [[] for _ in range(state.round)]
    for number, names in removals:
        per_round[number - 1] += names
    assert per_round == want["removedPerRound"]
    assert sorted(labels(state.decisions)) == sorted(want["decisions"])
    order = {name: i for i, name in enumerate(labels(state.candidates))}
    if all(d in order for d in labels(state.decisions)):
        assert labels(state.decisions) == sorted(labels(state.decisions), key=order.__getitem__), "J1 order"
    # the last decision event carries the final decisions
    assert sorted(labels(driver.decided_events[-1].decisions)) == sorted(want["decisions"])
    if "ratings" in want:
        expected, got = exact(want["ratings"]), ratings_by_round(driver)
        if asks:
            assert got == expected
        else:  # back-to-back rounds: the snapshot keeps the ratings of the last one (H6)
            last = max(expected, key=int)
            assert got == {last: expected[last]}
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
