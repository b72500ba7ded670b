"""Reaching a Kubernetes API server, and upstream's hand-over convention that both sides of it follow.

`placement-stream watch` reads the OCM objects from the API server and the OCM deployer writes decisions back to
it; both read the kubeconfig alike, and both take a Placement only when upstream's controller was told to leave
it to another scheduler.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from lightkube import ConfigError, KubeConfig

from connection.errors import KubeConfigError

__all__ = ["HANDOVER_ANNOTATION", "handed_over", "kube_config"]

HANDOVER_ANNOTATION = "cluster.open-cluster-management.io/experimental-scheduling-disable"
"""Upstream's placement controller skips a Placement whose annotation says "true"; another scheduler decides it."""


def kube_config(path: Path | None, context: str | None) -> KubeConfig:
    """The named kubeconfig, else the service account when in a cluster, else $KUBECONFIG or ~/.kube/config."""
    try:
        config = KubeConfig.from_file(path) if path is not None else KubeConfig.from_env()
        if context is not None:
            config.get(context_name=context)  # fails now, not at the first request
    except (ConfigError, OSError, yaml.YAMLError) as exc:
        raise KubeConfigError(f"kubeconfig{f' {path}' if path else ''}: {exc}") from None
    return config


def handed_over(body: Mapping[str, Any]) -> bool:
    """Whether a Placement carries upstream's hand-over annotation set to "true"."""
    meta = body.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    return isinstance(annotations, Mapping) and annotations.get(HANDOVER_ANNOTATION) == "true"
