"""The live what-if: what a subject event would decide against the current inventory and state, applied to
nothing (the engines' `what_if` is pure), with what would change against the subject's current decision."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from engine.core import WhatIfEngine
from engine.runtime.processor import Runtime
from topics.codec import DecodedEvent

__all__ = ["changes", "what_if"]


def what_if(runtime: Runtime, key: str, event: DecodedEvent, now: datetime) -> dict[str, Any] | None:
    """The what-if document of `event` for subject `key`; None when the subject's engine cannot answer one."""
    engine = runtime.engine_for(key)
    if not isinstance(engine, WhatIfEngine):
        return None
    state = runtime.states.get(key)
    answer = engine.what_if(key, state, event, runtime.context(now))
    return {
        "subject": key,
        "event": event.kind.name,
        "exists": state is not None,
        "decision": answer.decision,
        "current": answer.current,
        "changes": changes(answer.current, answer.decision),
        "explanation": answer.explanation,
    }


def changes(current: dict[str, Any] | None, decision: dict[str, Any] | None) -> dict[str, Any]:
    """Field by field, what `decision` changes of `current`: a list's added and removed items, another value's
    before and after; empty when nothing would change."""
    before, after = current or {}, decision or {}
    changed: dict[str, Any] = {}
    for name in sorted(before.keys() | after.keys()):
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        if isinstance(old, list | None) and isinstance(new, list | None) and (old or new) is not None:
            old_items, new_items = old or [], new or []
            changed[name] = {
                "added": [item for item in new_items if item not in old_items],
                "removed": [item for item in old_items if item not in new_items],
            }
        else:
            changed[name] = {"from": old, "to": new}
    return changed
