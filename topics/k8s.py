"""Kubernetes building blocks shared by the inventory and the placement objects."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field

from topics.base import KubeObject

__all__ = [
    "Condition",
    "Int32",
    "Int64",
    "LabelSelector",
    "LabelSelectorRequirement",
    "ObjectMeta",
    "ObjectReference",
]


Int32 = Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]
"""A Kubernetes `int32` field: the API server refuses anything wider, and totals are summed in 64 bits (E7)."""

Int64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
"""A Kubernetes `int64` field (generations, `tolerationSeconds`): wider numbers are refused, as the API server
refuses them, rather than failing later when a decision carrying one is written."""


class ObjectMeta(KubeObject):
    """The metadata fields the engines read; the rest of a pasted object's metadata is kept as is."""

    name: str = Field(min_length=1)
    namespace: str = ""
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    generation: Int64 = 0
    deletion_timestamp: datetime | None = None


class LabelSelectorRequirement(KubeObject):
    """One `matchExpressions` entry; the operator is checked by the engine so errors read like upstream's."""

    key: str
    operator: str
    values: list[str] | None = None


class LabelSelector(KubeObject):
    """A Kubernetes label selector."""

    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None


class ObjectReference(KubeObject):
    """A reference to an inventory object, as the hybrid engine and its advisors use it."""

    api_version: str | None = None
    kind: str | None = None
    namespace: str | None = None
    name: str = ""


class Condition(KubeObject):
    """A status condition with Kubernetes SetStatusCondition semantics."""

    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str = ""
    message: str = ""
    last_transition_time: datetime | None = None
    observed_generation: Int64 | None = None
