"""Log lines: aiokafka's repeats are thinned to one per template and window, the service's own never."""

from __future__ import annotations

import asyncio
import gc
import logging

import pytest
from aiokafka.errors import ProducerFenced

from streams.logs import RepeatFilter, on_loop_exception


def _record(logger: str, msg: str, args: tuple[object, ...], created: float) -> logging.LogRecord:
    record = logging.LogRecord(logger, logging.ERROR, __file__, 1, msg, args, None)
    record.created = created
    return record


CONNECT = "Unable connect to node with id %s: %s"


@pytest.mark.parametrize(
    ("lines", "shown", "repeated"),
    [
        # (logger, template, seconds): the connect error every 10 ms for 25 s -> one line per 10 s window
        ([("aiokafka", CONNECT, t / 100) for t in range(2500)], 3, [None, 999, 999]),
        # two templates are thinned apart
        ([("aiokafka", CONNECT, 0.0), ("aiokafka", "Unable to update metadata from %s", 0.1)], 2, [None, None]),
        # the service's own lines always pass
        ([("placement.health", "Kafka is not reachable", t / 10) for t in range(30)], 30, [None] * 30),
        # a line after a quiet spell passes, without a count
        ([("aiokafka.consumer", CONNECT, 0.0), ("aiokafka.consumer", CONNECT, 60.0)], 2, [None, None]),
    ],
    ids=["outage", "templates-apart", "own-lines", "quiet-spell"],
)
def test_repeats_are_thinned(lines: list[tuple[str, str, float]], shown: int, repeated: list[int | None]) -> None:
    thinning = RepeatFilter(window=10.0)
    passed = [r for r in (_record(n, m, (1, "refused"), t) for n, m, t in lines) if thinning.filter(r)]
    assert len(passed) == shown
    assert [getattr(r, "repeated", None) for r in passed] == repeated


async def test_an_unawaited_fence_is_one_warning_line_and_other_errors_keep_their_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    loop = asyncio.get_running_loop()
    gc.collect()  # the session's loop may hold garbage of earlier tests (fenced producers' futures among it)
    caplog.clear()
    loop.set_exception_handler(on_loop_exception)
    try:
        with caplog.at_level(logging.WARNING):
            for error in (ProducerFenced(), ValueError("not a fence")):
                future = loop.create_future()
                future.set_exception(error)
                del future
                gc.collect()
    finally:
        loop.set_exception_handler(None)
    fenced = [r for r in caplog.records if r.name == "placement.transactions"]
    assert [(r.levelno, r.exc_info) for r in fenced] == [(logging.WARNING, None)]
    others = [r for r in caplog.records if r.name == "asyncio"]
    assert len(others) == 1 and others[0].levelno == logging.ERROR and "ValueError" in str(others[0].exc_info)
