"""An API server for one test run, as `localbroker.testing` gives a broker: fails, never skips."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from localkube.errors import LocalKubeError
from localkube.server import LocalKube

__all__ = ["KubeUnavailable", "session_kube"]


class KubeUnavailable(LocalKubeError):
    """No API server could be built or started; the tests needing one fail with this message."""


@contextmanager
def session_kube(data_dir: Path) -> Iterator[Path]:
    """Yield the admin kubeconfig of a fresh API server with OCM's CRDs in `data_dir`."""
    server = LocalKube(data_dir)
    try:
        kubeconfig = server.start()
    except LocalKubeError as exc:
        raise KubeUnavailable(f"could not build or start the local Kubernetes API server: {exc}") from exc
    try:
        yield kubeconfig
    finally:
        server.stop()
