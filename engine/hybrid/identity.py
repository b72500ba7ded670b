"""Candidate identity, ordering and matching (hybrid spec B7, B8).

Identity is (kind, namespace, name) rather than a UID, so a candidate survives being re-created under the same
name and advisors can answer without knowing UIDs. `apiVersion` travels along for output but never takes part in
comparisons.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import ConfigDict
from pydantic.alias_generators import to_camel

from topics.k8s import ObjectReference
from topics.placementrule import RecommendationEntry

__all__ = ["Ident", "Ref", "entry_matches", "index_entries", "refs_out", "sort_refs"]

Ident = tuple[str, str, str]
"""(kind, namespace, name); namespace is empty for cluster-scoped objects."""


@dataclass(frozen=True, slots=True)
class Ref:
    """A candidate, eliminator or decision. Equality and hashing use the identity only."""

    __pydantic_config__ = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    kind: str
    namespace: str
    name: str
    api_version: str = field(default="", compare=False)

    @property
    def ident(self) -> Ident:
        """The identity triple."""
        return (self.kind, self.namespace, self.name)

    @property
    def sort_key(self) -> str:
        """`namespace/name`; Python compares code points, which orders like the UTF-8 bytes (B7)."""
        return f"{self.namespace}/{self.name}"

    @property
    def label(self) -> str:
        """`name` or `namespace/name`, the short form logs and tests use."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def out(self) -> ObjectReference:
        """The wire reference (J1): empty apiVersion and namespace are left out."""
        return ObjectReference(
            api_version=self.api_version or None, kind=self.kind, namespace=self.namespace or None, name=self.name
        )

    @classmethod
    def from_reference(cls, ref: ObjectReference, default_kind: str = "") -> Ref:
        """A Ref from a wire reference; a missing kind becomes `default_kind` (empty: matches any kind)."""
        return cls(ref.kind or default_kind, ref.namespace or "", ref.name, ref.api_version or "")


def sort_refs(refs: Iterable[Ref]) -> tuple[Ref, ...]:
    """Candidates in key order (B7)."""
    return tuple(sorted(refs, key=lambda r: r.sort_key))


def refs_out(refs: Iterable[Ref]) -> list[ObjectReference]:
    """Wire references in the given order."""
    return [r.out() for r in refs]


def entry_matches(entry: RecommendationEntry, ref: Ref) -> bool:
    """Whether a recommendation entry names `ref` (B8): namespace and name equal, kind equal when given."""
    if entry.name != ref.name or (entry.namespace or "") != ref.namespace:
        return False
    return entry.kind is None or entry.kind == ref.kind


def index_entries(entries: Sequence[RecommendationEntry], candidates: Sequence[Ref]) -> Mapping[Ident, int]:
    """The score each named candidate gets from one answer: entries naming no candidate are ignored (E5), the last
    entry for a candidate wins (E6) and an unset score is 100 (A3)."""
    by_place: dict[tuple[str, str], Ref] = {(c.namespace, c.name): c for c in candidates}
    scores: dict[Ident, int] = {}
    for entry in entries:
        ref = by_place.get((entry.namespace or "", entry.name))
        if ref is None or not entry_matches(entry, ref):
            continue
        scores[ref.ident] = 100 if entry.score is None else entry.score
    return scores
