"""The ClusterRoles in deploy/rbac/: what `watch` and the OCM deployer call is granted, and nothing more."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from cli.watch.kinds import watched_kinds

RBAC = Path(__file__).resolve().parents[2] / "deploy" / "rbac"


def grants(file: str) -> dict[tuple[str, str], set[str]]:
    """(api group, resource) -> verbs of the file's ClusterRole."""
    documents = [d for d in yaml.safe_load_all((RBAC / file).read_text()) if d]
    (role,) = [d for d in documents if d["kind"] == "ClusterRole"]
    granted: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                granted.setdefault((group, resource), set()).update(rule["verbs"])
    return granted


def bound(file: str) -> Any:
    documents = [d for d in yaml.safe_load_all((RBAC / file).read_text()) if d]
    (role,) = [d for d in documents if d["kind"] == "ClusterRole"]
    (binding,) = [d for d in documents if d["kind"] == "ClusterRoleBinding"]
    return binding["roleRef"]["name"] == role["metadata"]["name"]


def test_watch_may_list_and_watch_every_kind_it_follows_and_nothing_else() -> None:
    granted = grants("watch.yaml")
    followed = {(kind.group, kind.plural) for kind in watched_kinds(pods=True)}
    assert set(granted) == followed
    assert all(verbs == {"get", "list", "watch"} for verbs in granted.values())
    assert bound("watch.yaml")


def test_the_ocm_deployer_may_write_decisions_and_placement_status_only() -> None:
    ocm = "cluster.open-cluster-management.io"
    assert grants("ocm-deployer.yaml") == {
        (ocm, "placements"): {"get"},
        (ocm, "placements/status"): {"patch"},
        (ocm, "placementdecisions"): {"list", "create", "update", "patch", "delete"},
        (ocm, "placementdecisions/status"): {"update", "patch"},
        ("multicluster.x-k8s.io", "placementdecisions"): {"list", "create", "update", "delete"},
    }
    assert bound("ocm-deployer.yaml")
