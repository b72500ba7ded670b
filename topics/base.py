"""Base classes for wire models: frozen, camelCase on the wire, snake_case in Python."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import orjson
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from topics.interning import SharedByKey

__all__ = ["EventData", "KubeObject", "validated_once"]

T = TypeVar("T")


class EventData(BaseModel):
    """Payload of an event this project defines: unknown fields are a schema violation."""

    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True)

    JSON_FIELDS: ClassVar[frozenset[str]] = frozenset()
    """Fields typed as plain JSON (str, int, lists and dicts of them) that the codec writes as they are:
    pydantic would walk every entry of a large decision only to copy it."""

    def json_field(self, name: str, value: Any) -> Any:
        """What the codec writes for `value`, the value of the field `name` of JSON_FIELDS: the value itself, or
        in a subclass the same JSON in a form quicker to write (with parts as `orjson.Fragment`)."""
        return value


class KubeObject(BaseModel):
    """A Kubernetes-style object: unknown fields are kept so users can send the YAML they already have."""

    model_config = ConfigDict(frozen=True, extra="allow", alias_generator=to_camel, populate_by_name=True)


def validated_once(pool: SharedByKey[T], value: Any, validate: Callable[[Any], T]) -> T:
    """`validate(value)` once per distinct plain-JSON `value` while anything holds the result, which is shared:
    for what many objects repeat (100,000 Placements carry a few hundred distinct predicate, toleration and
    prioritizer lists, and each model costs about 600 bytes; their decisions' conditions are a few). The
    results are frozen models and lists of them that nothing mutates. `validate` may be a pydantic wrap
    validator's handler."""
    if type(value) not in (dict, list):
        return validate(value)
    try:
        key = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # not plain JSON: validate it as it is
        return validate(value)
    return pool.get(key, lambda: validate(value))
