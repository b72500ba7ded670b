"""Base classes for wire models: frozen, camelCase on the wire, snake_case in Python."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

__all__ = ["EventData", "KubeObject"]


class EventData(BaseModel):
    """Payload of an event this project defines: unknown fields are a schema violation."""

    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True)

    JSON_FIELDS: ClassVar[frozenset[str]] = frozenset()
    """Fields typed as plain JSON (str, int, lists and dicts of them) that the codec writes as they are:
    pydantic would walk every entry of a large decision only to copy it."""


class KubeObject(BaseModel):
    """A Kubernetes-style object: unknown fields are kept so users can send the YAML they already have."""

    model_config = ConfigDict(frozen=True, extra="allow", alias_generator=to_camel, populate_by_name=True)
