"""The `watch` command's state file errors name the file and the problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.watch.published import Published
from streams.errors import ServiceError


@pytest.mark.parametrize("content", [b"{not json", b'{"format": 99, "objects": {}}', b"[]"])
def test_a_foreign_state_file_is_refused_with_its_name(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "state.json"
    path.write_bytes(content)
    with pytest.raises(ServiceError, match="watch state file") as raised:
        Published.load(path)
    assert str(path) in str(raised.value)
