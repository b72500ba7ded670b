"""The tools the deploy tests check with, each built or installed once into the project's cache by
scripts/tools.sh: Helm (from its Go module) and the Node validators (Strimzi's and the Prometheus operator's CRD
schemas, Prometheus' PromQL grammar). A tool that cannot be had fails the tests that need it, naming why; none is
skipped."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from deploy_support import VALIDATE, NodeCheck, tool


@pytest.fixture(scope="session")
def helm() -> Path:
    """The Helm binary in the cache (built on first use: minutes; reused after)."""
    return tool("helm")


@pytest.fixture(scope="session")
def node_check() -> NodeCheck:
    """Runs tests/deploy/node/validate.mjs with the cached packages."""
    folder = tool("node-validators")

    def check(*, resources: list[dict[str, Any]] | None = None, promql: list[str] | None = None) -> dict[str, Any]:
        request = json.dumps({"resources": resources or [], "promql": promql or []})
        done = subprocess.run(
            ["node", str(VALIDATE), str(folder)], input=request, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr
        answer: dict[str, Any] = json.loads(done.stdout)
        return answer

    return check
