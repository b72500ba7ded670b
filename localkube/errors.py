"""The error root of the local Kubernetes API server."""

from __future__ import annotations

__all__ = ["KubeBuildError", "KubeServerError", "LocalKubeError"]


class LocalKubeError(Exception):
    """Anything the local API server could not do; the message says what and why."""


class KubeBuildError(LocalKubeError):
    """A binary or the CRDs could not be fetched or built (no Go toolchain, no module proxy, a failed build)."""


class KubeServerError(LocalKubeError):
    """The storage or the API server did not start, or did not become ready."""
