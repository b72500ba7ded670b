"""An unusable kubeconfig (for `watch` and the OCM deployer) is an error naming the file and the problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from connection.errors import KubeConfigError
from connection.kubernetes import kube_config


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "kubeconfig"),
        ("clusters: [", "kubeconfig"),
    ],
)
def test_an_unusable_kubeconfig_is_named(tmp_path: Path, content: str | None, problem: str) -> None:
    path = tmp_path / "config"
    if content is not None:
        path.write_text(content)
    with pytest.raises(KubeConfigError, match=problem) as raised:
        kube_config(path, None)
    assert str(path) in str(raised.value)
