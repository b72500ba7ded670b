"""A local Kubernetes API server with OCM's CRDs, built from the Go module proxy (`python -m localkube`)."""

from __future__ import annotations

from localkube.errors import KubeBuildError, KubeServerError, LocalKubeError
from localkube.server import LocalKube

__all__ = ["KubeBuildError", "KubeServerError", "LocalKube", "LocalKubeError"]
