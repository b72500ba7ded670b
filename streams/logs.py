"""JSON log lines on stderr, one object per line."""

from __future__ import annotations

import asyncio
import logging
import sys
from datetime import UTC, datetime
from typing import Any

import orjson
from aiokafka.errors import ProducerFenced

from streams.version import VERSION

__all__ = ["JsonFormatter", "RepeatFilter", "configure_logging", "on_loop_exception"]

_RESERVED = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """One JSON object per record; each names the release that wrote it, so the lines of a rolling upgrade, when
    two releases run side by side, tell which wrote what."""

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "version": VERSION,
        }
        line.update({k: v for k, v in record.__dict__.items() if k not in _RESERVED})
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


class RepeatFilter(logging.Filter):
    """Lets one aiokafka line per message template through every `window` seconds.

    While the broker is away aiokafka logs every failed connect, metadata update and fetch: a soak measured
    about a hundred ERROR lines a second per instance, thousands per outage, which bury the service's own
    "Kafka is not reachable" line. The line let through after a quiet spell carries `repeated`: how many
    like it were left out.
    """

    def __init__(self, window: float = 10.0) -> None:
        super().__init__()
        self._window = window
        self._shown: dict[tuple[str, object], tuple[float, int]] = {}
        """(logger, template) -> (when last shown, how many left out since); aiokafka's templates are few."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith("aiokafka"):
            return True
        key = (record.name, record.msg)
        shown = self._shown.get(key)
        if shown is not None and record.created - shown[0] < self._window:
            self._shown[key] = (shown[0], shown[1] + 1)
            return False
        self._shown[key] = (record.created, 0)
        if shown is not None and shown[1]:
            record.repeated = shown[1]
        return True


def configure_logging(level: str = "INFO") -> None:
    """Route all logging to stderr as JSON; aiokafka's chatter is kept at WARNING and its repeats thinned."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RepeatFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("aiokafka").setLevel(logging.WARNING)


def on_loop_exception(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The event loop's handler for errors nobody awaited. A fenced task producer fails the requests it still
    had in flight, some of them futures inside aiokafka that nobody awaits once the task's transaction was
    aborted or its batch given up. asyncio would log each as "Future exception was never retrieved" with a
    traceback, although the fence was already handled: one WARNING line says it instead. Everything else goes
    to the default handler."""
    error = context.get("exception")
    if isinstance(error, ProducerFenced) and "never retrieved" in str(context.get("message", "")):
        logging.getLogger("placement.transactions").warning(
            "a fenced producer's request failed after its task was given up", extra={"error": str(error)}
        )
        return
    loop.default_exception_handler(context)
