"""The release's version, as pyproject.toml states it, is what `--version` prints, every log line carries and
the `placement_stream_build_info` gauge labels."""

from __future__ import annotations

import logging
import subprocess
import sys
import tomllib
from pathlib import Path

import orjson
import pytest
from prometheus_client import generate_latest

from streams.cli import main
from streams.logs import JsonFormatter
from streams.metrics import Metrics

ROOT = Path(__file__).resolve().parents[2]
RELEASE = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_version_option_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"placement-stream {RELEASE}\n"


def test_the_module_command_prints_it_too() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "streams", "--version"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, f"placement-stream {RELEASE}\n")


def test_build_info_gauge_labels_the_version() -> None:
    page = generate_latest(Metrics().registry).decode()
    assert f'placement_stream_build_info{{version="{RELEASE}"}} 1.0' in page.splitlines()


def test_every_log_line_names_the_version() -> None:
    record = logging.LogRecord("placement.test", logging.INFO, __file__, 1, "started %s", ("x",), None)
    line = orjson.loads(JsonFormatter().format(record))
    assert (line["message"], line["version"]) == ("started x", RELEASE)
