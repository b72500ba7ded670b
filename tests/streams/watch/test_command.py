"""The `watch` command's configuration errors name the file and the problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams.errors import ServiceError
from streams.watch.command import kube_config
from streams.watch.published import Published


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
    with pytest.raises(ServiceError, match=problem) as raised:
        kube_config(path, None)
    assert str(path) in str(raised.value)


@pytest.mark.parametrize("content", [b"{not json", b'{"format": 99, "objects": {}}', b"[]"])
def test_a_foreign_state_file_is_refused_with_its_name(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "state.json"
    path.write_bytes(content)
    with pytest.raises(ServiceError, match="watch state file") as raised:
        Published.load(path)
    assert str(path) in str(raised.value)
