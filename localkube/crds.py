"""CustomResourceDefinitions from upstream Go modules: OCM's and SIG-Multicluster's installed at start, the
Prometheus operator's for the tests that apply its resources.

The Go module proxy serves a module's files, its CRD YAML among them; `go mod download` fetches and checks them
against the checksum database, and only the CRD files are copied into the cache.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import yaml
from lightkube import ApiError, Client, KubeConfig
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition

from localbroker.fetch import exclusive
from localkube.build import go_tool, kube_cache
from localkube.errors import KubeBuildError, KubeServerError

__all__ = [
    "CLUSTER_INVENTORY_API",
    "OCM_API",
    "PROMETHEUS_OPERATOR",
    "SERVED_AT_START",
    "CrdModule",
    "ensure_crds",
    "install_crds",
    "load_crds",
]


@dataclass(frozen=True, slots=True)
class CrdModule:
    """Some CRD files of one version of one Go module, cached in `<cache>/kube/<name>-<version>/crds`."""

    name: str
    module: str
    version: str
    files: tuple[str, ...]


OCM_API = CrdModule(
    "ocm-api",
    "open-cluster-management.io/api",
    "v1.2.0",
    (
        "cluster/v1/0000_00_clusters.open-cluster-management.io_managedclusters.crd.yaml",
        "cluster/v1beta2/0000_00_clusters.open-cluster-management.io_managedclustersets.crd.yaml",
        "cluster/v1beta2/0000_01_clusters.open-cluster-management.io_managedclustersetbindings.crd.yaml",
        "cluster/v1beta1/0000_02_clusters.open-cluster-management.io_placements.crd.yaml",
        "cluster/v1beta1/0000_03_clusters.open-cluster-management.io_placementdecisions.crd.yaml",
        "cluster/v1alpha1/0000_05_clusters.open-cluster-management.io_addonplacementscores.crd.yaml",
    ),
)
CLUSTER_INVENTORY_API = CrdModule(
    "cluster-inventory-api",
    "sigs.k8s.io/cluster-inventory-api",
    "v0.1.2",
    ("config/crd/bases/multicluster.x-k8s.io_placementdecisions.yaml",),
)
"""SIG-Multicluster's vendor-neutral PlacementDecision (`multicluster.x-k8s.io/v1alpha1`)."""
PROMETHEUS_OPERATOR = CrdModule(
    "prometheus-operator",
    "github.com/prometheus-operator/prometheus-operator",
    "v0.88.0",
    (
        "example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml",
        "example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml",
    ),
)
"""ServiceMonitor and PrometheusRule, which the Helm chart can render; not installed at start."""
SERVED_AT_START = (OCM_API, CLUSTER_INVENTORY_API)
MARKER_NAME = ".complete"


def _module_dir(source: CrdModule) -> Path:
    command = [go_tool(), "mod", "download", "-json", f"{source.module}@{source.version}"]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=600)
    try:
        answer = json.loads(done.stdout or "{}")
    except json.JSONDecodeError:
        answer = {}
    if done.returncode != 0 or "Dir" not in answer:
        detail = answer.get("Error") or done.stderr.strip()[-800:]
        raise KubeBuildError(f"{' '.join(command)} failed (exit {done.returncode}): {detail}")
    return Path(answer["Dir"])


def ensure_crds(source: CrdModule = OCM_API, cache_root: Path | None = None) -> list[Path]:
    """The module's CRD files in the cache, fetched on first use only."""
    folder = kube_cache(cache_root) / f"{source.name}-{source.version}" / "crds"
    wanted = [folder / Path(name).name for name in source.files]
    if (folder / MARKER_NAME).is_file():
        return wanted
    with exclusive(folder.parent.with_name(f"{source.name}-{source.version}.lock")):
        if not (folder / MARKER_NAME).is_file():
            module_dir = _module_dir(source)
            staging = folder.with_name("crds.partial")
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir(parents=True)
            for name in source.files:
                if not (module_dir / name).is_file():
                    raise KubeBuildError(f"{source.module}@{source.version} has no {name}")
                shutil.copyfile(module_dir / name, staging / Path(name).name)
            shutil.rmtree(folder, ignore_errors=True)
            staging.rename(folder)
            (folder / MARKER_NAME).write_text(f"{source.module} {source.version}\n")
    return wanted


def load_crds(files: list[Path]) -> list[dict[str, Any]]:
    """Every CustomResourceDefinition document of the files."""
    found: list[dict[str, Any]] = []
    for path in files:
        for body in yaml.safe_load_all(path.read_text()):
            if isinstance(body, dict) and body.get("kind") == "CustomResourceDefinition":
                found.append(body)
    return found


def install_crds(kubeconfig: Path, crds: list[dict[str, Any]], timeout: float = 60.0) -> None:
    """Create the CRDs (an existing one is replaced by the same object) and wait until each is Established."""
    client = Client(config=KubeConfig.from_file(kubeconfig))
    try:
        for body in crds:
            crd = cast(CustomResourceDefinition, CustomResourceDefinition.from_dict(body))
            try:
                client.create(crd)
            except ApiError as exc:
                if exc.status.code != 409:
                    raise KubeServerError(f"creating CRD {body['metadata']['name']}: {exc}") from exc
        deadline = time.monotonic() + timeout
        for body in crds:
            name = body["metadata"]["name"]
            while not _established(client.get(CustomResourceDefinition, name)):
                if time.monotonic() > deadline:
                    raise KubeServerError(f"CRD {name} not Established after {timeout:g} s")
                time.sleep(0.1)
    finally:
        client.close()


def _established(crd: Any) -> bool:
    conditions = (crd.status.conditions if crd.status else None) or []
    return any(c.type == "Established" and c.status == "True" for c in conditions)
