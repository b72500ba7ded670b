"""Interpreter tuning for the processor's workload: the garbage collector and the thread switch interval.

Garbage collector: each record allocates dozens of short-lived container objects (decoded JSON, pydantic
models, new state mappings) while the process holds a large long-lived heap (inventory, subject states).
With Python's default young-generation threshold (700) the cyclic collector ran every few records, and its
collections of the older generations walked that heap again and again: about a third of the processing
time in the benchmarks. Nearly all of this garbage is freed by reference counting anyway, so collecting
less often costs little memory.

Switch interval: the engine runs in a worker thread while the event loop talks to Kafka. Each time the loop
wakes from its selector (a response arrived) it must take the GIL back from the busy engine thread, which
gives it up only every switch interval: 5 ms by default. A transaction is several round trips, and each of
them waited that long: a probe measured a 1 ms sleep of the loop oversleeping by 6.8 ms (median) beside a
busy thread at 5 ms, by 1.2 ms at 1 ms. The loop avoids most of these hand-overs by waiting for a short
engine step before it goes back to its selector (streams/engine_thread.py).

Restore: reading a task's changelog builds the state of every subject in a few seconds, millions of objects
that live as long as the task. The collector walked them in every older-generation collection, during the
restore and afterwards in the middle of processing: with 100,000 Placements, 2.8-3.0 s of the restore, and
2.2-2.7 s for each full collection after it. So the collector is paused while a task restores, and what is
alive afterwards is frozen: moved out of the generations the collector walks. Frozen objects are still freed
by reference counting when they go; what is not reclaimed is a reference cycle among them that becomes garbage
later. The restored state forms none, and the rest alive at a restore is mostly the service's long-lived
machinery.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused_then_frozen", "tune_garbage_collector", "tune_switch_interval"]


def tune_garbage_collector(threshold: int) -> None:
    """Set the young-generation threshold; 0 leaves Python's default."""
    if threshold > 0:
        _, older, oldest = gc.get_threshold()
        gc.set_threshold(threshold, older, oldest)


def tune_switch_interval(milliseconds: float) -> None:
    """How long a thread holding the GIL may run before a waiting one gets it."""
    sys.setswitchinterval(milliseconds / 1000)


@contextmanager
def collector_paused_then_frozen() -> Iterator[None]:
    """No cyclic collection inside; on leaving, what is alive is frozen, as the long-lived state a restore has
    just built (see the module docstring), and the collector runs again as it did before."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
