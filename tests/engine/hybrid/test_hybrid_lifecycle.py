"""Round lifecycle through the engine (hybrid spec D, E, F, G7, H5, H7, I, J2) as scenario tables.

Each scenario is a list of steps (see `hybrid_tables.play`) and the expected end state; only the keys given are
checked: round, candidates, eliminators, decisions, removed (every elimination in order), proposals (candidate
publications), decided (decision events), deadline (seconds after t = 0, or None) and stored (advisors whose
answer the round holds).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from hybrid_tables import clusters, labels, play

from tests.engine.drivers.hybrid import T0

C3 = clusters("c1", "c2", "c3")
DEV = clusters("c1", "c2", "c3", c1={"env": "dev"}, c2={"env": "dev"}, c3={"env": "prod"})
A = {"name": "a"}
B = {"name": "b"}
C = {"name": "c"}
P = {"name": "p", "type": "predicate"}
ONE_A = {"replicas": 1, "advisors": [A]}
ONE_AB = {"replicas": 1, "advisors": [A, B]}
DEV_A = {"replicas": 1, "targetLabels": {"matchLabels": {"env": "dev"}}, "advisors": [A]}

# (id, inventory, steps, expected)
SCENARIOS: list[tuple[str, list[dict[str, Any]], list[tuple[Any, ...]], dict[str, Any]]] = [
    # D: generation and reset
    (
        "D2-new-rule-opens-round-1",
        C3,
        [("rule", ONE_A)],
        {"round": 1, "candidates": "c1 c2 c3", "proposals": 1, "decided": 1, "deadline": 30},
    ),
    (
        "D2-generation-change-resets",
        C3,
        [("rule", ONE_A), ("post", "a", ["c1", "c2"]), ("rule", ONE_A, 2)],
        {"round": 3, "candidates": "c1 c2 c3", "eliminators": "", "proposals": 3, "stored": "", "decided": 1},
    ),
    (
        "D3-same-generation-changes-nothing",
        C3,
        [("rule", ONE_A), ("post", "a", ["c1", "c2"]), ("rule", ONE_A)],
        {"round": 2, "candidates": "c1 c2", "eliminators": "c3", "proposals": 2},
    ),
    (
        "D3-new-object-outside-selector",
        DEV,
        [("rule", DEV_A), ("post", "a", ["c1"]), ("inventory", [*DEV, *clusters("c4", c4={"env": "prod"})])],
        {"round": 1, "candidates": "c1 c2", "proposals": 1, "stored": "a", "decisions": "c1"},
    ),
    (
        "D3-label-change-keeps-membership",
        DEV,
        [
            ("rule", DEV_A),
            ("post", "a", ["c1"]),
            (
                "inventory",
                clusters("c1", "c2", "c3", c1={"env": "dev", "x": "y"}, c2={"env": "dev"}, c3={"env": "prod"}),
            ),
        ],
        {"round": 1, "candidates": "c1 c2", "proposals": 1, "stored": "a", "decisions": "c1"},
    ),
    (
        "D2-new-member-resets-and-keeps-decisions",
        C3,
        [("rule", {"advisors": [A]}), ("post", "a", ["c1"]), ("inventory", clusters("c1", "c2", "c3", "c4"))],
        {"round": 2, "candidates": "c1 c2 c3 c4", "decisions": "c1 c2 c3", "proposals": 2, "decided": 2, "stored": ""},
    ),
    (
        "D2-label-change-moves-membership",
        DEV,
        [
            ("rule", DEV_A),
            ("inventory", clusters("c1", "c2", "c3", c1={"env": "dev"}, c2={"env": "prod"}, c3={"env": "dev"})),
        ],
        {"round": 2, "candidates": "c1 c3", "proposals": 2},
    ),
    (
        "D2-eliminated-object-deleted-resets",
        C3,
        [("rule", ONE_A), ("post", "a", ["c1", "c2"]), ("inventory", clusters("c1", "c2"))],
        {"round": 3, "candidates": "c1 c2", "eliminators": "", "proposals": 3},
    ),
    (
        "D5-empty-fresh-list-clears-decisions",
        C3,
        [("rule", {"advisors": [A]}), ("post", "a", []), ("inventory", [])],
        {"round": 2, "candidates": "", "decisions": "", "decided": 3, "deadline": None, "proposals": 2},
    ),
    # E: recommendations
    (
        "E1-stale-and-future-rounds-dropped",
        C3,
        [("rule", ONE_A), ("post", "a", ["c1", "c2"]), ("post", "a", ["c1"], 1), ("post", "a", ["c1"], 7)],
        {"round": 2, "stored": "", "candidates": "c1 c2"},
    ),
    (
        "E2-unlisted-advisor-ignored",
        C3,
        [("rule", ONE_A), ("post", "zed", ["c1"]), ("post", "A", ["c1"])],
        {"round": 1, "stored": "", "decisions": "", "decided": 1},
    ),
    (
        "E3-last-write-wins",
        C3,
        [("rule", ONE_AB), ("post", "a", ["c1"]), ("post", "a", ["c2"]), ("post", "b", ["c2"])],
        {"round": 1, "decisions": "c2", "stored": "a b"},
    ),
    (
        "E4-empty-predicate-list-vetoes-all",
        C3,
        [("rule", {"replicas": 1, "advisors": [P]}, 1, ["c1"]), ("post", "p", [])],
        {"round": 1, "decisions": "", "candidates": "c1 c2 c3", "decided": 2},
    ),
    (
        "E4-empty-priority-list-contributes-0",
        C3,
        [("rule", ONE_A), ("post", "a", []), ("post", "a", []), ("post", "a", [])],
        {"round": 3, "decisions": "c3", "removed": "c1 c2", "proposals": 3},
    ),
    (
        "E7-repost-changes-decisions",
        C3,
        [("rule", ONE_A), ("post", "a", ["c2"]), ("post", "a", ["c3"])],
        {"round": 1, "decisions": "c3", "decided": 3},
    ),
    (
        "E7-repost-clears-decisions",
        C3,
        [("rule", {"replicas": 1, "advisors": [P]}), ("post", "p", ["c1"]), ("post", "p", [])],
        {"round": 1, "decisions": "", "decided": 3},
    ),
    (
        "E7-repost-starts-reduction-G7-keeps-decisions",
        C3,
        [("rule", ONE_A), ("post", "a", ["c2"]), ("post", "a", ["c1", "c2"])],
        {"round": 2, "decisions": "c2", "eliminators": "c3", "proposals": 2, "decided": 2},
    ),
    # F: readiness, timeout, short-circuits
    (
        "F1-waits-for-every-advisor",
        C3,
        [("rule", ONE_AB), ("post", "a", ["c1"])],
        {"round": 1, "decisions": "", "stored": "a", "deadline": 30},
    ),
    (
        "F1-no-advisors-always-ready-H5-back-to-back-H6-unpublished",
        C3,
        [("rule", {"replicas": 2})],
        {"round": 2, "decisions": "c2 c3", "removed": "c1", "proposals": 0, "decided": 1, "deadline": None},
    ),
    (
        "H6-no-advisors-reset-asks-nobody-and-decides-at-once",
        C3,
        [("rule", {"replicas": 1}), ("inventory", clusters("c1", "c2", "c3", "c4"))],
        {"round": 7, "decisions": "c3", "removed": "c1 c2 c1 c2 c4", "proposals": 0, "decided": 1, "deadline": None},
    ),
    (
        "H6-advisors-removed-by-an-update-asks-nobody",
        C3,
        [("rule", ONE_A), ("rule", {"replicas": 1}, 2)],
        {"round": 4, "decisions": "c3", "removed": "c1 c2", "proposals": 1, "decided": 2, "deadline": None},
    ),
    (
        "F2-deadline-not-reached",
        C3,
        [("rule", ONE_AB), ("post", "a", ["c1"]), ("advance", 29)],
        {"round": 1, "decisions": "", "deadline": 30},
    ),
    (
        "F2-timeout-finalises",
        C3,
        [("rule", ONE_AB), ("post", "a", ["c1"]), ("advance", 30)],
        {"round": 1, "decisions": "c1", "deadline": None, "proposals": 1},
    ),
    (
        "F2-deadline-restarts-each-round",
        C3,
        [("rule", ONE_A), ("advance", 10), ("post", "a", ["c1", "c2"])],
        {"round": 2, "deadline": 40},
    ),
    (
        "F2-no-answer-at-all",
        C3,
        [("rule", ONE_AB), ("advance", 31)],
        {"round": 1, "decisions": "c3", "removed": "c1 c2", "eliminators": "c1 c2", "proposals": 1},
    ),
    (
        "F3-replicas-zero-decides-nothing-at-once",
        C3,
        [("rule", {"replicas": 0, "advisors": [A]}, 1, ["c1"]), ("post", "a", ["c1"])],
        {"round": 1, "decisions": "", "deadline": None, "proposals": 1, "removed": "", "stored": "a", "decided": 1},
    ),
    ("F3-negative-replicas", C3, [("rule", {"replicas": -3})], {"round": 1, "decisions": "", "removed": ""}),
    (
        "F3-no-candidates",
        C3,
        [("rule", {"targets": [{"name": "ghost"}], "advisors": [A]})],
        {"round": 1, "candidates": "", "decisions": "", "deadline": None},
    ),
    # I: forced finalisation
    (
        "I2-forced-reductions-stay-in-round",
        C3,
        [("rule", ONE_AB), ("post", "a", ["c1@50", "c2@90", "c3@10"]), ("advance", 30)],
        {"round": 1, "decisions": "c2", "eliminators": "c3 c1", "removed": "c3 c1", "proposals": 1},
    ),
    (
        "I1-absent-predicate-vetoes-nothing",
        C3,
        [("rule", {"replicas": 1, "advisors": [P, A]}), ("post", "a", ["c2"]), ("advance", 30)],
        {"round": 1, "decisions": "c2", "removed": ""},
    ),
    (
        "I3-late-full-post-reevaluates",
        C3,
        [("rule", ONE_AB), ("post", "a", ["c1"]), ("advance", 30), ("post", "b", ["c2"])],
        {"round": 2, "decisions": "c1", "eliminators": "c3", "proposals": 2, "deadline": 60},
    ),
    (
        "I3-late-partial-post-refinalises",
        C3,
        [
            ("rule", {"replicas": 1, "advisors": [A, B, C]}),
            ("post", "a", ["c1"]),
            ("advance", 30),
            ("post", "b", ["c2"]),
        ],
        {"round": 1, "decisions": "c1", "removed": "c3 c2", "proposals": 1, "deadline": None},
    ),
    (
        "I3-stale-post-after-timeout-dropped",
        C3,
        [("rule", ONE_A), ("post", "a", ["c1", "c2"]), ("advance", 30), ("post", "a", ["c1"], 1)],
        {"round": 2, "decisions": "c2", "removed": "c3 c1", "proposals": 2},
    ),
    # H7 and J2
    (
        "H7-decision-weight-makes-sticky",
        C3,
        [("rule", {"replicas": 1}, 1, ["c1"])],
        {"decisions": "c1", "removed": "c2 c3", "round": 3},
    ),
    (
        "H7-decision-weight-zero-not-sticky",
        C3,
        [("rule", {"replicas": 1, "decisionWeight": 0}, 1, ["c1"])],
        {"decisions": "c3", "removed": "c1 c2", "round": 3},
    ),
    (
        "J2-same-set-not-republished",
        C3,
        [("rule", {"advisors": [A]}), ("post", "a", ["c1"]), ("post", "a", ["c2"])],
        {"decisions": "c1 c2 c3", "decided": 2},
    ),
]


@pytest.mark.parametrize(("inventory", "steps", "expected"), [s[1:] for s in SCENARIOS], ids=[s[0] for s in SCENARIOS])
def test_hybrid_lifecycle(
    inventory: list[dict[str, Any]], steps: list[tuple[Any, ...]], expected: dict[str, Any]
) -> None:
    driver = play(inventory, steps)
    state = driver.state
    assert state is not None
    checks = {
        "round": lambda: state.round,
        "candidates": lambda: " ".join(labels(state.candidates)),
        "eliminators": lambda: " ".join(labels(state.eliminators)),
        "decisions": lambda: " ".join(labels(state.decisions)),
        "removed": lambda: " ".join(n for r in driver.reductions for n in r.removed),
        "proposals": lambda: len(driver.proposals),
        "decided": lambda: len(driver.decided_events),
        "deadline": lambda: None if state.deadline is None else (state.deadline - T0) / timedelta(seconds=1),
        "stored": lambda: " ".join(state.recommendations),
    }
    actual = {key: checks[key]() for key in expected}
    assert actual == expected
    published = [p.round for p in driver.proposals]
    assert published == sorted(set(published)), "each round is published once, in order"
    assert driver.decided_events, "the first evaluation of a new rule is always published"
