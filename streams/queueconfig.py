"""Reading and re-reading the queue configuration file: startup errors, reload rules and `check-config`.

The file is YuniKorn's scheduler configuration (`partitions:`) or the `yunikorn-configs` ConfigMap holding it
under `data["queues.yaml"]`; which of the two was read is logged and printed by `check-config`.
"""

from __future__ import annotations

import hashlib
import logging
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from engine.core import Emit
from engine.errors import QueueConfigError
from engine.queue.config import load_queue_config
from engine.runtime import OutputRecord, Runtime
from streams.errors import ServiceError
from topics.queue import QueueConfigRejected

__all__ = ["QueueConfigFile", "QueueConfigStartupError", "Reload", "check_config"]

_LOG = logging.getLogger(__name__)


class QueueConfigStartupError(ServiceError):
    """The file named at start is missing, unreadable or invalid."""


@dataclass(frozen=True, slots=True)
class Reload:
    """Outcome of a changed file: `config` when valid, else `error` (the previous config stays active)."""

    sha256: str
    config: Any = None
    error: str | None = None


class QueueConfigFile:
    """The active queue configuration file and the digest of its active content."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.active_sha256: str | None = None
        self._seen_sha256: str | None = None

    def load_initial(self) -> Any:
        """Read and build the file; any failure is a startup error naming the file."""
        try:
            text = self.path.read_bytes()
        except OSError as exc:
            raise QueueConfigStartupError(f"invalid queue configuration {self.path}: {exc.strerror or exc}") from exc
        digest = hashlib.sha256(text).hexdigest()
        try:
            config = load_queue_config(text.decode(), str(self.path))
        except (QueueConfigError, UnicodeDecodeError) as exc:
            raise QueueConfigStartupError(f"invalid queue configuration {self.path}: {exc}") from exc
        self.active_sha256 = self._seen_sha256 = digest
        if config.source:
            _LOG.info("queue configuration read from a ConfigMap", extra={"path": str(self.path), "key": config.source})
        return config

    def poll(self) -> Reload | None:
        """Re-read the file; None when nothing new was seen (same content as last time, or unreadable now)."""
        try:
            text = self.path.read_bytes()
        except OSError:
            return None
        digest = hashlib.sha256(text).hexdigest()
        if digest == self._seen_sha256:
            return None
        self._seen_sha256 = digest
        if digest == self.active_sha256:
            return None
        try:
            config = load_queue_config(text.decode(), str(self.path))
        except (QueueConfigError, UnicodeDecodeError) as exc:
            return Reload(sha256=digest, error=str(exc))
        self.active_sha256 = digest
        return Reload(sha256=digest, config=config)

    def apply_changes(self, runtime: Runtime, now: datetime) -> tuple[Reload | None, list[OutputRecord]]:
        """Poll and hand a changed file to the runtime: the new rules, or the `queueconfig.rejected` event."""
        reload = self.poll()
        if reload is None:
            return None, []
        if reload.error is not None:
            rejected = QueueConfigRejected(path=str(self.path), error=reload.error, sha256=reload.sha256)
            return reload, runtime.announce(Emit("queueconfig.rejected", rejected, key=f"QueueConfig/{self.path}"), now)
        return reload, runtime.reconfigure(reload.config, now)


def check_config(path: Path) -> int:
    """The `check-config` command: 0 and `queue configuration <file> is valid` on stdout, or 1 and the
    startup error on stderr. A ConfigMap file names the ConfigMap and key that were read."""
    try:
        config = QueueConfigFile(path).load_initial()
    except QueueConfigStartupError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    read_from = f" (read from {config.source})" if config.source else ""
    print(f"queue configuration {path} is valid{read_from}")
    return 0
