"""The live what-if's server side (`POST /what-if`): the posted document read as `apply -f` reads it, and evaluated
on the instance that owns its subject, through the engine's worker thread under the batch lock, as a batch is
(the runtime is not thread-safe). Nothing is published and no state changes (engine/runtime/whatif.py)."""

from __future__ import annotations

from datetime import datetime

import orjson

from topics.codec import DecodedEvent, decode_event
from topics.errors import ContractError
from topics.names import TopicRole
from topics.objects.convert import ApplyContext, ConversionError, convert
from topics.objects.documents import DocumentError, parse_documents

__all__ = ["WhatIfError", "subject_event"]


class WhatIfError(ValueError):
    """The posted document cannot be evaluated; the message says why (answered 400)."""


def subject_event(body: bytes, now: datetime, namespace: str = "default") -> tuple[str, DecodedEvent]:
    """The subject key and event of the one Placement, PlacementRule or pod (or workload) document in `body`,
    YAML or JSON, converted as `apply -f` converts it.

    Raises:
        WhatIfError: not exactly one document, or not one that becomes a subject event.
    """
    try:
        documents = parse_documents("the request body", body)
    except DocumentError as exc:
        raise WhatIfError(str(exc)) from exc
    if len(documents) != 1:
        raise WhatIfError(f"the request body holds {len(documents)} documents; a what-if takes one")
    try:
        records = convert(documents[0].body, ApplyContext(namespace=namespace, time=now))
    except ConversionError as exc:  # NotApplicable included: nothing would be decided
        raise WhatIfError(str(exc)) from exc
    subjects = [r for r in records if r.role is TopicRole.SUBMISSIONS and r.value is not None]
    if len(records) != 1 or not subjects:
        label = records[0].label if records else "the document"
        raise WhatIfError(
            f"{label} is inventory, not a subject: a what-if takes a Placement, a PlacementRule or a pod (or"
            " workload) YuniKorn schedules"
        )
    record = subjects[0]
    try:
        event = decode_event(orjson.dumps(record.value), TopicRole.SUBMISSIONS)
    except ContractError as exc:
        raise WhatIfError(str(exc)) from exc
    return record.key, event
