"""Per-placement compiled selectors and CEL expressions, built once per placement object (generation).

Compilation errors are kept as values: whether they are reported depends on the pipeline (spec C6, H8).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.cluster.matching.cel_env import CelCompileError, CompiledExpression, compile_expression
from engine.cluster.matching.selectors import (
    EVERYTHING,
    Selector,
    SelectorError,
    compile_label_selector,
    compile_selector,
)
from engine.cluster.pipeline.spread.terms import NO_SPREAD, SpreadPolicy, parse_spread
from topics.interning import Interning, SharedByKey
from topics.placement import ClusterClaimSelector, Placement, PlacementSpec

__all__ = [
    "CompiledPlacement",
    "CompiledSelector",
    "CompiledSpecs",
    "PredicateKey",
    "compile_placement",
    "compiled_spec",
]

PredicateKey = tuple[tuple[Selector, Selector, str], ...]


@dataclass(frozen=True, slots=True)
class CompiledSelector:
    """label AND claim AND every CEL expression; `cel_key` identifies the expressions for result caching."""

    labels: Selector
    claims: Selector
    cel: tuple[CompiledExpression, ...]
    cel_key: str
    cel_pure: bool = True
    """No expression calls `scores()`: the CEL outcome depends on the ManagedCluster object alone."""
    cel_reads: tuple[tuple[str, ...], ...] | None = None
    """For pure expressions that read the cluster through fixed paths only: those paths (see `cel_env`)."""


@dataclass(frozen=True, slots=True)
class CompiledPlacement:
    """Predicates, decision-group selectors and spread terms of one Placement, or the first error of each."""

    predicates: tuple[CompiledSelector, ...]
    predicate_error: str | None
    groups: tuple[CompiledSelector, ...]
    """Selectors of the predefined groups that compiled, up to the first failure."""
    group_error: str | None
    score_names: frozenset[str] | None
    """Score resource names used through `scores()` literals; None means any name (spec L4)."""
    spread: SpreadPolicy = NO_SPREAD
    """The spread terms, validated (or their first error)."""
    source: PlacementSpec | None = field(default=None, compare=False, repr=False)
    """The spec compiled: held, so the spec's id names no other spec while this is shared by it."""
    cluster_sets: frozenset[str] = frozenset()
    """`spec.clusterSets`, as the indexes keep them."""
    score_resources: frozenset[str] | None = None
    """AddOnPlacementScore names the placement reads (AddOn configurations, `scores()` literals); None: any."""

    @property
    def predicate_key(self) -> PredicateKey:
        """What the predicates match by, without the parsed CEL trees (slow to hash): a shared cache key."""
        return tuple((selector.labels, selector.claims, selector.cel_key) for selector in self.predicates)


def _claims(selector: ClusterClaimSelector | None) -> Selector:
    if selector is None:
        return EVERYTHING
    return compile_selector(None, selector.match_expressions)


class CompiledSpecs(SharedByKey[CompiledPlacement]):
    """A runtime's compiled specs by spec object (`Interning.pools`)."""

    __slots__ = ()


def compiled_spec(placement: Placement, interning: Interning) -> CompiledPlacement:
    """`compile_placement` once per spec object: Placements that repeat a spec share one (topics/placement.py
    pools equal specs), so a cold start or a restore compiles each distinct spec once."""
    spec = placement.spec
    return interning.pools(CompiledSpecs).get(id(spec), lambda: compile_placement(placement))


def compile_placement(placement: Placement) -> CompiledPlacement:
    """Compile every selector in spec order, stopping each list at its first error."""
    predicates: list[CompiledSelector] = []
    predicate_error: str | None = None
    names: set[str] = set()
    any_name = False
    for predicate in placement.spec.predicates:
        required = predicate.required_cluster_selector
        try:
            labels = compile_label_selector(required.label_selector)
            claims = _claims(required.claim_selector)
            texts = required.cel_selector.cel_expressions if required.cel_selector else []
            expressions = tuple(compile_expression(text) for text in texts)
        except SelectorError as exc:
            predicate_error = str(exc)
            break
        except CelCompileError as exc:
            predicate_error = f"compilation failed: {exc}"
            break
        for expression in expressions:
            if expression.score_names is None:
                any_name = True
            else:
                names |= expression.score_names
        pure = all(e.score_names is not None and not e.score_names for e in expressions)
        reads = [e.reads for e in expressions]
        fixed = None if not pure or None in reads else tuple(sorted({p for paths in reads for p in paths or ()}))
        predicates.append(CompiledSelector(labels, claims, expressions, "\x00".join(texts), pure, fixed))
    groups: list[CompiledSelector] = []
    group_error: str | None = None
    for group in placement.spec.decision_strategy.group_strategy.decision_groups:
        selector = group.group_cluster_selector
        try:
            groups.append(
                CompiledSelector(
                    compile_label_selector(selector.label_selector), _claims(selector.claim_selector), (), ""
                )
            )
        except SelectorError as exc:
            group_error = str(exc)
            break
    score_names = None if any_name else frozenset(names)
    return CompiledPlacement(
        tuple(predicates),
        predicate_error,
        tuple(groups),
        group_error,
        score_names,
        parse_spread(placement.spec.spread_policy),
        placement.spec,
        frozenset(placement.spec.cluster_sets),
        _score_resources(placement.spec, score_names),
    )


def _score_resources(spec: PlacementSpec, score_names: frozenset[str] | None) -> frozenset[str] | None:
    if score_names is None:
        return None
    names = set(score_names)
    for config in spec.prioritizer_policy.configurations:
        coordinate = config.score_coordinate
        if coordinate is not None and coordinate.type != "BuiltIn" and coordinate.add_on is not None:
            names.add(coordinate.add_on.resource_name)
    return frozenset(names)
