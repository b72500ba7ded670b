"""Helpers of the deploy tests: the checkout, the cached tools, rendering the Helm chart and the Strimzi manifests."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from streams.cli import main

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "placement-stream"
VALIDATE = Path(__file__).with_name("node") / "validate.mjs"

NodeCheck = Callable[..., dict[str, Any]]
"""`node_check(resources=[...], promql=[...])` -> validate.mjs's answer (see there)."""


def tool(name: str) -> Path:
    """The path of a tool `scripts/tools.sh` built or installed into the cache (once: later calls reuse it)."""
    command = ["bash", str(ROOT / "scripts" / "tools.sh"), name]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.fail(f"scripts/tools.sh {name} failed:\n{done.stderr[-3000:]}", pytrace=False)
    return Path(done.stdout.strip().splitlines()[-1])


def helm_template(helm: Path, *arguments: str, release: str = "placement") -> subprocess.CompletedProcess[str]:
    """`helm template` of the chart in namespace `placement` (its output or its error)."""
    command = [str(helm), "template", release, str(CHART), "--namespace", "placement", *arguments]
    return subprocess.run(command, capture_output=True, text=True, check=False)


def render(helm: Path, *arguments: str) -> list[dict[str, Any]]:
    """The chart's manifests; a failed render fails the test with Helm's message."""
    done = helm_template(helm, *arguments)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def strimzi_manifests(folder: Path, *arguments: str) -> dict[str, list[dict[str, Any]]]:
    """Run `placement-stream manifests strimzi --out folder ARGUMENTS` and read back what it wrote, by kind."""
    assert main(["manifests", "strimzi", "--out", str(folder), *arguments]) == 0
    documents = [d for f in sorted(folder.glob("*.yaml")) for d in yaml.safe_load_all(f.read_text())]
    kinds: dict[str, list[dict[str, Any]]] = {}
    for document in documents:
        kinds.setdefault(document["kind"], []).append(document)
    return kinds
