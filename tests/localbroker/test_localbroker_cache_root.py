"""Where the local broker, the demo and the benchmarks keep Kafka's jars and their data."""

from __future__ import annotations

from pathlib import Path

import pytest

from localbroker import fetch


@pytest.mark.parametrize(
    ("checkout", "env", "expected"),
    [
        (True, {}, "{package}/.cache"),
        (True, {"PLACEMENT_CACHE_DIR": "{tmp}/mine"}, "{tmp}/mine"),
        (False, {"XDG_CACHE_HOME": "{tmp}/xdg"}, "{tmp}/xdg/placement-stream"),
        (False, {"HOME": "{tmp}/home"}, "{tmp}/home/.cache/placement-stream"),
        (False, {"PLACEMENT_CACHE_DIR": "{tmp}/mine", "XDG_CACHE_HOME": "{tmp}/xdg"}, "{tmp}/mine"),
    ],
)
def test_a_checkout_keeps_its_cache_inside_and_an_installed_package_uses_the_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, checkout: bool, env: dict[str, str], expected: str
) -> None:
    package = tmp_path / "site"
    (package / "localbroker").mkdir(parents=True)
    if checkout:
        (package / "pyproject.toml").write_text("[project]\n")
    monkeypatch.setattr(fetch, "_PACKAGE_DIR", package / "localbroker")
    for name in ("PLACEMENT_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value.format(tmp=tmp_path))
    assert fetch.default_cache_root() == Path(expected.format(package=package, tmp=tmp_path)).resolve()
