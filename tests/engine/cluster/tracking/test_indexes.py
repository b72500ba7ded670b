"""DecisionCounts: the maximum (and the maximum without one placement) stays right through small changes kept
step by step and large ones that rebuild the tally. PlacementIndex: the placements holding each cluster."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from engine.cluster.fleet.ids import Fleet
from engine.cluster.tracking.indexes import DecisionCounts, OthersView, PlacementIndex, TrackedPlacement

CLUSTERS = [f"c{i}" for i in range(12)]
FLEETS = (Fleet(CLUSTERS), Fleet(CLUSTERS[3:]), Fleet([*CLUSTERS[::2], "new"]))
"""The whole fleet, one without c0-c2 (clusters deleted while still decided), one that also gained a cluster."""


def _brute_top(decisions: dict[int, frozenset[str]]) -> tuple[int, int]:
    counts = Counter(name for decided in decisions.values() for name in decided)
    highest = max(counts.values(), default=0)
    return highest, sum(1 for value in counts.values() if value == highest) if highest else 0


def _brute_without(decisions: dict[int, frozenset[str]], key: int) -> int:
    counts = Counter(name for other, decided in decisions.items() if other != key for name in decided)
    return max(counts.values(), default=0)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("largest", [1, 3, 12], ids=["one-cluster", "few", "whole-fleet"])
def test_decision_counts_match_a_recount_after_every_change(seed: int, largest: int) -> None:
    rng = random.Random(seed)
    counts = DecisionCounts()
    decisions: dict[int, frozenset[str]] = {}
    for _ in range(300):
        key = rng.randrange(10)
        old = decisions.get(key, frozenset())
        new = frozenset(rng.sample(CLUSTERS, rng.randint(0, largest)))
        counts.replace(old, new)
        decisions[key] = new
        if rng.random() < 0.5:  # reads interleave with changes, as Balance evaluations do
            assert counts.top() == _brute_top(decisions)
            probe = rng.randrange(10)
            own = decisions.get(probe, frozenset())
            if rng.random() < 0.5:  # the array (read through a fleet) and the Counter serve max_without alike
                fleet = rng.choice(FLEETS)
                recount = Counter(name for other, decided in decisions.items() if other != probe for name in decided)
                expected = [recount[name] for name in fleet.names]
                assert OthersView(counts, own).over(fleet).tolist() == expected
                # with the decision's ids kept by the engine: the maximum is then read from the array, unless
                # some own cluster has left the fleet
                kept = OthersView(counts, own, fleet, fleet.ids(own))
                assert kept.over(fleet).tolist() == expected
                assert kept.max_count() == _brute_without(decisions, probe)
            assert counts.max_without(own) == _brute_without(decisions, probe)
    assert counts.top() == _brute_top(decisions)


def test_decision_counts_drop_the_top_one_holder_at_a_time() -> None:
    """The most-held cluster leaving decision after decision: the maximum follows it down, then stops at the
    next cluster's count."""
    counts = DecisionCounts()
    decisions = [frozenset({"x", "y"}) if i < 3 else frozenset({"x"}) for i in range(6)]
    for decided in decisions:
        counts.replace(frozenset(), decided)
    assert counts.top() == (6, 1)
    seen = []
    for decided in decisions:
        counts.replace(decided, decided - {"x"})
        seen.append(counts.top())
    assert seen == [(5, 1), (4, 1), (3, 2), (3, 1), (3, 1), (3, 1)]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("largest", [1, 3, 12], ids=["one-cluster", "few", "whole-fleet"])
def test_placement_index_holders_match_a_recount_after_every_change(seed: int, largest: int) -> None:
    """`holding` finds exactly the placements whose tracked decision holds each cluster asked about, one
    cluster or many, through replacements, removals and re-adds."""
    rng = random.Random(seed)
    index = PlacementIndex()
    decisions: dict[str, frozenset[str]] = {}
    for _ in range(300):
        key = f"Placement/ns/p{rng.randrange(10)}"
        if rng.random() < 0.15:
            index.remove(key)
            decisions.pop(key, None)
        else:
            decided = frozenset(rng.sample(CLUSTERS, rng.randint(0, largest)))
            index.put(key, TrackedPlacement("ns", frozenset(), frozenset(), decided))
            decisions[key] = decided
        holders: dict[str, set[str]] = {name: set() for name in [*CLUSTERS, "never-decided"]}
        for holder, decided in decisions.items():
            for cluster in decided:
                holders[cluster].add(holder)
        asked = rng.sample(sorted(holders), rng.choice((0, 1, 3, len(holders))))
        assert index.holding(asked) == {name: holders[name] for name in asked}


@pytest.mark.parametrize("seed", range(6))
def test_balance_counts_hold_tracked_and_peer_decisions_once_each(seed: int) -> None:
    """With several instances, Balance counts every other placement (F2): the tracked ones and the peers' (other
    instances' placements). A placement counts once, by its tracked decision while tracked here (a peer entry
    then is ignored), and by its peer entry otherwise; a release hands the tracked decision to the peer view.
    Only tracked placements are ever found by `holding`, as only they are re-decided here."""
    rng = random.Random(seed)
    index = PlacementIndex()
    tracked: dict[str, frozenset[str]] = {}
    peers: dict[str, frozenset[str]] = {}
    for _ in range(400):
        key = f"Placement/ns/p{rng.randrange(8)}"
        decided = frozenset(rng.sample(CLUSTERS, rng.randint(0, 4)))
        action = rng.choice(("put", "remove", "peer", "release"))
        if action == "put":
            index.put(key, TrackedPlacement("ns", frozenset(), frozenset(), decided))
            tracked[key] = decided
            peers.pop(key, None)
        elif action == "remove":
            index.remove(key)
            tracked.pop(key, None)
        elif action == "peer":
            index.observe_peer(key, decided)
            if key not in tracked:
                peers[key] = decided
        elif key in tracked:
            index.release(key)
            peers[key] = tracked.pop(key)
        else:
            index.release(key)  # not tracked: nothing to hand over
        counted = {**{k: v for k, v in peers.items() if k not in tracked}, **tracked}
        recount = Counter(name for decided in counted.values() for name in decided)
        assert +index.counts.counts == +recount
        assert {k: v for k, v in index.peers.items() if v} == {
            k: v for k, v in counted.items() if v and k not in tracked
        }
        assert index.holding(CLUSTERS) == {name: {k for k, v in tracked.items() if name in v} for name in CLUSTERS}
        probe = f"Placement/ns/p{rng.randrange(8)}"
        own = tracked.get(probe, frozenset())
        assert [index.others(probe).count(name) for name in CLUSTERS] == [recount[n] - (n in own) for n in CLUSTERS]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("outside", [False, True], ids=["all-in-fleet", "some-left-the-fleet"])
def test_decision_counts_read_the_maximum_from_the_array_through_large_changes(seed: int, outside: bool) -> None:
    """Large changes (a cold start's whole decisions) drop the tally: the maximum then comes from the array over
    the fleet, or from a recount when some counted cluster has left the fleet; a run of small ones rebuilds the
    tally. New decisions passed with their ids step the array as their names would."""
    rng = random.Random(seed)
    names = [f"c{i:02d}" for i in range(40)]
    fleet = Fleet(names[:30] if outside else names)
    counts = DecisionCounts()
    counts.over(fleet)
    decisions: dict[int, frozenset[str]] = {}
    for step in range(400):  # a mix of sizes, then a long run of small changes (the tally is rebuilt)
        key = rng.randrange(12)
        old = decisions.get(key, frozenset())
        new = frozenset(rng.sample(names, rng.choice((0, 1, 2, 20, 30) if step < 200 else (0, 1, 2))))
        ids = (fleet.serial, fleet.ids(new)) if not old and rng.random() < 0.7 else None
        counts.replace(old, new, ids)
        decisions[key] = new
        if rng.random() < 0.6:
            assert counts.top() == _brute_top(decisions)
            recount = Counter(name for decided in decisions.values() for name in decided)
            assert counts.over(fleet).tolist() == [recount[name] for name in fleet.names]
    assert counts.top() == _brute_top(decisions)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("read_before", [False, True], ids=["nothing-read-before", "array-and-tally-read-before"])
def test_deferred_counts_end_as_counting_one_by_one(seed: int, read_before: bool) -> None:
    """A restore's additions counted together on leaving `deferred`: equal decisions are shared objects (as
    restored ones are), changes that remove clusters come in between (counted at once, after what waits), also
    from decisions added within, and afterwards the counts, the array and the maximum are those of counting
    each change as it came."""
    rng = random.Random(seed)
    shared = [frozenset(rng.sample(CLUSTERS, rng.randint(1, 8))) for _ in range(5)]
    one_by_one, together = DecisionCounts(), DecisionCounts()
    decisions: dict[int, frozenset[str]] = {}
    for key in range(6):  # decisions held before the restore, by placements that stay
        decided = rng.choice(shared)
        decisions[key] = decided
        for counts in (one_by_one, together):
            counts.replace(frozenset(), decided)
    if read_before:
        for counts in (one_by_one, together):
            counts.over(FLEETS[0])
            counts.top()
    steps = []
    for key in range(6, 60):
        if rng.random() < 0.3:  # a placement gives up clusters (one restored just before, too): its counts
            held = rng.choice([k for k, d in decisions.items() if d])  # must be there first
            steps.append((decisions[held], decisions[held] - {rng.choice(sorted(decisions[held]))}))
            decisions[held] = steps[-1][1]
        else:
            decided = rng.choice([*shared, frozenset()])
            steps.append((frozenset(), decided))
            decisions[key] = decided
    for old, new in steps:
        one_by_one.replace(old, new)
    with together.deferred():
        for old, new in steps:
            together.replace(old, new)
    assert together.counts == one_by_one.counts == Counter(n for d in decisions.values() for n in d)
    assert together.top() == one_by_one.top() == _brute_top(decisions)
    for fleet in FLEETS:
        assert together.over(fleet).tolist() == one_by_one.over(fleet).tolist()
    together.replace(decisions[0], frozenset())  # and both go on alike
    one_by_one.replace(decisions[0], frozenset())
    assert together.top() == one_by_one.top()
    assert together.over(FLEETS[0]).tolist() == one_by_one.over(FLEETS[0]).tolist()


def test_deferred_counts_wait_until_leaving() -> None:
    counts = DecisionCounts()
    decided = frozenset({"c1", "c2"})
    with counts.deferred():
        for _ in range(3):
            counts.replace(frozenset(), decided)
        assert counts.counts == Counter(), "nothing is counted before leaving"
    assert counts.counts == Counter({"c1": 3, "c2": 3})
    assert counts.top() == (3, 2)
