"""A seeded corpus of hostile input: what a careless or malicious producer can put on the input topics.

Every record carries its class, the outcome the processor owes it (dead-lettered, or decided) and, for a dead
letter, a pattern its exception message must match, so the reason has to name the problem. Good records are
interleaved with the bad ones and carry the decision they must get: a processor that survives by dropping or
mis-deciding valid input fails too. The replay test and the real-broker test both run this corpus.

Predictions rest on the inventory the corpus starts with (`baseline`): clusters hc1..hc4 in the set `hostile`
(bound in namespace `hostile`), and a set `weird` (namespace `weird`) that the unicode and huge-map clusters join
without moving those predictions.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace

from tests.faults.hostile_limits import (
    costly_cel,
    deep_nesting,
    huge_labels,
    huge_numbers,
    oversize,
    regex_cel,
    regex_queue,
    unicode_oddities,
    wrong_topic,
)
from tests.faults.hostile_records import (
    BASE_TIME,
    BROKER_MESSAGE_LIMIT,
    SEED,
    STAGES,
    STEP,
    AppDecision,
    HostileRecord,
    Outcome,
    PlacementDecision,
    _Builder,
)
from tests.faults.hostile_shapes import (
    bad_envelope,
    bad_key,
    baseline,
    binary_bytes,
    good,
    key_mismatch,
    non_object_json,
    truncated_json,
    unknown_type,
    unknown_version,
    wrong_types,
)

__all__ = [
    "BROKER_MESSAGE_LIMIT",
    "CLASSES",
    "SEED",
    "AppDecision",
    "HostileRecord",
    "Outcome",
    "PlacementDecision",
    "build_corpus",
    "letter_problem",
    "summarise",
]

CLASSES: dict[str, Callable[[_Builder], None]] = {
    build.__name__.removesuffix("_oddities"): build
    for build in (good, truncated_json, binary_bytes, non_object_json, bad_envelope, unknown_type, unknown_version,
                  bad_key, key_mismatch, wrong_types, deep_nesting, huge_labels, huge_numbers, unicode_oddities,
                  oversize, wrong_topic, regex_queue, regex_cel, costly_cel)
}  # fmt: skip
"""Class name -> builder of its records (the huge-label cluster is built with the baseline)."""


def build_corpus(seed: int = SEED) -> list[HostileRecord]:
    """The baseline inventory, then every class's records shuffled together (seeded)."""
    b = _Builder(random.Random(seed))
    baseline(b)
    head = len(b.records)
    for kind, build in CLASSES.items():
        b.kind = kind
        build(b)
    body = b.records[head:]
    b.rng.shuffle(body)
    records = b.records[:head] + body
    return [replace(r, index=i, time=BASE_TIME + STEP * i, baseline=i < head) for i, r in enumerate(records)]


# --- checks both transports share ------------------------------------------------------------------------------
def letter_problem(record: HostileRecord, stage: str | None, message: str) -> str | None:
    """What is wrong with a dead letter's stage and reason headers, if anything."""
    if stage not in STAGES or (record.stage is not None and stage != record.stage):
        return f"stage {stage!r}, expected {record.stage or sorted(STAGES)} ({message[:200]})"
    if not re.search(record.reason, message, re.IGNORECASE):
        shown = message if len(message) <= 300 else f"{message[:150]}...{message[-120:]}"
        return f"reason {shown!r} ({len(message)} characters) does not match /{record.reason}/"
    return None


def summarise(failures: list[tuple[HostileRecord, str]], total: int) -> str:
    """One line per variant and kind of problem, most frequent first, with the first record's problem as example."""
    groups: dict[tuple[str, str], list[tuple[HostileRecord, str]]] = defaultdict(list)
    for record, problem in failures:
        groups[(record.variant, re.sub(r"\d+", "N", problem)[:80])].append((record, problem))
    lines = [f"{len(failures)} of {total} records wrong:"]
    for found in sorted(groups.values(), key=len, reverse=True)[:30]:
        record, problem = found[0]
        lines.append(f"  {record.label()} and {len(found) - 1} more like it: {problem[:240]}")
    return "\n".join(lines)
