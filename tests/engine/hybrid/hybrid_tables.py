"""Shared helpers of the hybrid tables: compact inventory rows to objects, references to labels, and the
conformance runner that drives a scripted case through `RuleDriver` in the documented event order."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from engine.hybrid.identity import Ref
from tests.engine.drivers.hybrid import RuleDriver
from topics.base import KubeObject
from topics.inventory import Deployer, InventoryResource, ManagedCluster
from topics.k8s import ObjectReference
from topics.placementrule import PlacementRuleDecided

HERE = Path(__file__).parent


def load_table(name: str) -> list[dict[str, Any]]:
    """A JSON table next to the tests."""
    rows: list[dict[str, Any]] = json.loads((HERE / name).read_text())
    return rows


def build(row: Mapping[str, Any]) -> KubeObject:
    """One inventory object from a compact row: `{kind, name, namespace?, labels?, type?, placesOnto?}`."""
    kind = row["kind"]
    meta = {"name": row["name"], "namespace": row.get("namespace", ""), "labels": dict(row.get("labels", {}))}
    if kind == "ManagedCluster":
        status = {"allocatable": row["allocatable"]} if "allocatable" in row else {}
        return ManagedCluster.model_validate({"metadata": meta, "status": status})
    if kind == "Deployer":
        spec: dict[str, Any] = {"type": row["type"]}
        if "placesOnto" in row:
            spec["placementTarget"] = {"kind": row["placesOnto"]}
        return Deployer.model_validate({"metadata": meta, "spec": spec})
    return InventoryResource.model_validate({"apiVersion": "example.io/v1", "kind": kind, "metadata": meta})


def build_all(rows: Iterable[Mapping[str, Any]]) -> list[KubeObject]:
    """Several inventory objects."""
    return [build(r) for r in rows]


def label(ref: Ref | ObjectReference) -> str:
    """`name` for cluster-scoped, `namespace/name` for namespaced references (the tables' spelling)."""
    namespace = ref.namespace or ""
    return f"{namespace}/{ref.name}" if namespace else ref.name


def labels(refs: Iterable[Ref | ObjectReference]) -> list[str]:
    """Several labels, in order."""
    return [label(r) for r in refs]


def entry(text: str, score: int | None = None) -> dict[str, Any]:
    """A recommendation entry from a table label."""
    namespace, _, name = text.rpartition("/")
    out: dict[str, Any] = {"name": name}
    if namespace:
        out["namespace"] = namespace
    if score is not None:
        out["score"] = score
    return out


def ref_row(text: str) -> dict[str, Any]:
    """An ObjectReference row from a table label (used to seed decisions)."""
    return entry(text)


@dataclass
class Outcome:
    """What a scripted run produced, in the tables' terms."""

    driver: RuleDriver
    decisions_before_reposts: list[str] | None = None
    interim: list[list[str]] = field(default_factory=list)

    @property
    def state(self) -> Any:
        """The final rule state."""
        assert self.driver.state is not None
        return self.driver.state


def _deliver_posts(driver: RuleDriver, posts: Sequence[Sequence[Any]], round_number: int) -> None:
    for advisor, entries in posts:
        if driver.round != round_number:
            return
        driver.post(advisor, entries)


def run_script(case: Mapping[str, Any], *, timeout_seconds: float = 30.0) -> Outcome:
    """Drive a case: create the rule at t = 0, then for each round check its candidates and deliver that round's
    inventory change, posts, timeout, re-posts and stale posts, skipping what a left round missed.

    A rule with advisors is followed through its candidate publications. A rule without advisors publishes
    none (nobody is asked, H6): its rounds and the candidates of each are read from the last decision event's
    status snapshot, as the conformance cases say."""
    driver = RuleDriver(build_all(case["inventory"]), timeout_seconds=timeout_seconds)
    driver.apply_rule(case["spec"], decisions=[ref_row(d) for d in case["decisionsBefore"]])
    outcome = Outcome(driver)
    script = {step["n"]: step for step in case["rounds"]}
    if not case["spec"].get("advisors"):
        _run_unpublished(outcome, script, timeout_seconds)
        return outcome
    handled = 0
    while handled < len(driver.proposals):
        proposal = driver.proposals[handled]
        handled += 1
        number = proposal.round
        assert number in script, f"round {number} was published but the script has no step for it"
        step = script[number]
        assert labels(proposal.candidates) == step["expectCandidates"], f"candidates of round {number}"
        if number > 1:
            assert proposal.status is not None
            outcome.interim.append(labels(proposal.status.decisions))
        _deliver_step(outcome, step, number, timeout_seconds)
    return outcome


def _run_unpublished(outcome: Outcome, script: Mapping[int, Mapping[str, Any]], timeout_seconds: float) -> None:
    """The rounds of a rule without advisors, from its status snapshot: round k's candidates are the snapshot's
    candidates and eliminators in key order, less those removed in earlier rounds."""
    driver = outcome.driver
    assert driver.proposals == [], "a rule without advisors asks nobody (H6)"
    number = 0
    while number < snapshot_of(driver).round:
        number += 1
        assert number in script, f"round {number} was reached but the script has no step for it"
        snapshot = snapshot_of(driver)
        removed_before = {name for r in snapshot.reductions if r.round < number for name in r.removed}
        everyone = sorted([*snapshot.candidates, *snapshot.eliminators], key=lambda r: f"{r.namespace or ''}/{r.name}")
        candidates = [name for name in labels(everyone) if name not in removed_before]
        assert candidates == script[number]["expectCandidates"], f"candidates of round {number}"
        _deliver_step(outcome, script[number], number, timeout_seconds)


def snapshot_of(driver: RuleDriver) -> PlacementRuleDecided:
    """The status snapshot of the last decision event, which must agree with the rule's state."""
    assert driver.decided_events and driver.state is not None
    last = driver.decided_events[-1]
    assert (last.round, labels(last.candidates)) == (driver.state.round, labels(driver.state.candidates))
    return last


def _deliver_step(outcome: Outcome, step: Mapping[str, Any], number: int, timeout_seconds: float) -> None:
    """Round `number`'s events in the documented order, as far as the rule stays in that round."""
    driver = outcome.driver
    if driver.round != number:
        return
    if "inventory" in step:
        driver.replace_inventory(build_all(step["inventory"]))
    _deliver_posts(driver, step.get("posts", []), number)
    if step.get("timeout") and driver.round == number:
        driver.advance(timeout_seconds)
    if "reposts" in step and driver.round == number:
        outcome.decisions_before_reposts = labels(driver.state.decisions) if driver.state else []
        _deliver_posts(driver, step["reposts"], number)
    for advisor, stale_round, entries in step.get("stale", []):
        if driver.round != number:
            break
        before = driver.state
        dropped = driver.post(advisor, entries, round_number=stale_round)
        assert dropped.state == before and not dropped.emits, "a stale post must change nothing"


def ratings_by_round(driver: RuleDriver) -> dict[str, dict[str, Decimal]]:
    """`{round: {candidate: rating}}` of the rating rounds the status showed in full (H6), exact."""
    out: dict[str, dict[str, Decimal]] = {}
    for reduction in driver.full_reductions:
        if reduction.ratings:
            out[str(reduction.round)] = {label(r.ref): Decimal(r.hundredths) / 100 for r in reduction.ratings}
    return out


def exact(table: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, Decimal]]:
    """Expected ratings as exact decimals."""
    return {rnd: {name: Decimal(str(v)) for name, v in row.items()} for rnd, row in table.items()}


def entries_of(items: Sequence[str | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Recommendation entries from table shorthand: `name`, `ns/name`, `name@score`, or a full dict."""
    out: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, Mapping):
            out.append(dict(item))
            continue
        text, _, score = item.partition("@")
        out.append(entry(text, int(score) if score else None))
    return out


def play(inventory: Sequence[Mapping[str, Any]], steps: Sequence[Sequence[Any]]) -> RuleDriver:
    """Run scenario steps against a fresh driver.

    Steps: `("rule", spec[, generation[, decisions]])`, `("post", advisor, entries[, round])`, `("advance", s)`,
    `("inventory", rows)` (replaces the inventory), `("delete",)`.
    """
    driver = RuleDriver(build_all(inventory))
    for step in steps:
        action, args = step[0], step[1:]
        if action == "rule":
            generation = args[1] if len(args) > 1 else 1
            decisions = [ref_row(d) for d in args[2]] if len(args) > 2 else []
            driver.apply_rule(args[0], generation=generation, decisions=decisions)
        elif action == "post":
            driver.post(args[0], entries_of(args[1]), args[2] if len(args) > 2 else None)
        elif action == "advance":
            driver.advance(args[0])
        elif action == "inventory":
            driver.replace_inventory(build_all(args[0]))
        elif action == "delete":
            driver.delete_rule()
        else:
            raise AssertionError(f"unknown step {action!r}")
    return driver


def clusters(*names: str, **labels_of: Any) -> list[dict[str, Any]]:
    """ManagedCluster rows; `labels_of` maps a cluster name to its labels."""
    return [{"kind": "ManagedCluster", "name": n, "labels": labels_of.get(n, {})} for n in names]
