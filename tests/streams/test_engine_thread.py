"""How the event loop waits for the engine's steps (streams/engine_thread.py): holding the loop for a quick step,
never for longer than the wait, results and errors as the step gave them, one step at a time in one thread."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import pytest

from streams.engine_thread import EngineThread


def _sleeping(seconds: float, value: object = "done") -> Callable[[], object]:
    def step() -> object:
        time.sleep(seconds)
        return value

    return step


def _failing() -> object:
    raise ValueError("the step failed")


@pytest.mark.parametrize("wait_ms", [0.0, 100.0])
@pytest.mark.parametrize(
    ("step", "expected"),
    [(_sleeping(0.0, 7), 7), (_sleeping(0.15, "late"), "late"), (_failing, ValueError)],
)
async def test_the_result_is_what_the_step_gave_whatever_the_wait(
    wait_ms: float, step: Callable[[], object], expected: object
) -> None:
    engine = EngineThread(wait_ms)
    try:
        if isinstance(expected, type):
            with pytest.raises(expected):
                await engine.result(engine.start(step))
        else:
            assert await engine.result(engine.start(step)) == expected
    finally:
        engine.close()


@pytest.mark.parametrize(("wait_ms", "loop_ran"), [(500.0, False), (0.0, True)])
async def test_a_step_quicker_than_the_wait_holds_the_loop(wait_ms: float, loop_ran: bool) -> None:
    """Held, the loop runs nothing else until the step is done: no hand-over of the interpreter lock for a
    Kafka response in between. With no wait it serves its callbacks meanwhile, as it did before."""
    engine = EngineThread(wait_ms)
    ran = threading.Event()
    try:
        started = engine.start(_sleeping(0.05))
        asyncio.get_running_loop().call_soon(ran.set)
        await engine.result(started)
        assert ran.is_set() is loop_ran
    finally:
        engine.close()


async def test_a_step_longer_than_the_wait_lets_the_loop_serve_meanwhile() -> None:
    """The bound that keeps heartbeats and probes answered: after the wait the loop runs its tasks again while
    the step goes on."""
    engine = EngineThread(50.0)
    ticks_during_step: list[bool] = []
    started = engine.start(_sleeping(0.6))

    async def tick() -> None:
        while True:
            ticks_during_step.append(not started.done())
            await asyncio.sleep(0.01)

    ticker = asyncio.create_task(tick())
    try:
        await asyncio.sleep(0)  # the ticker's first tick, before the wait
        assert await engine.result(started) == "done"
    finally:
        ticker.cancel()
        engine.close()
    assert sum(ticks_during_step) >= 5, f"the loop ticked {sum(ticks_during_step)} times during a 0.6 s step"


async def test_steps_run_one_at_a_time_in_one_thread_off_the_loop() -> None:
    engine = EngineThread(100.0)
    seen: list[tuple[int, int]] = []
    active = 0

    def step() -> None:
        nonlocal active
        active += 1
        seen.append((threading.get_ident(), active))
        time.sleep(0.01)
        active -= 1

    try:
        futures = [engine.start(step) for _ in range(4)]
        for future in futures:
            await engine.result(future)
    finally:
        engine.close()
    assert len({ident for ident, _ in seen}) == 1
    assert seen[0][0] != threading.get_ident()
    assert [depth for _, depth in seen] == [1, 1, 1, 1]
