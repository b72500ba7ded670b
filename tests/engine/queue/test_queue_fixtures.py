"""Real configuration files from the YuniKorn repositories and documentation, with the verdict YuniKorn gives.

`fixtures/yunikorn/verdicts.json` names each file's origin and its expected verdict: `valid`, or the error. Rows
with an `upstream` field are refused here with this service's own decoder message where YuniKorn's YAML decoder
words it differently. `fixtures/validator_conformance.json` holds generated configurations with the verdict
yunikorn-core itself returned for each (validation and queue creation).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.errors import QueueConfigError
from engine.queue.config import load_queue_config

_FIXTURES = Path(__file__).parent / "fixtures"
_YUNIKORN = _FIXTURES / "yunikorn"
_VERDICTS: list[dict[str, Any]] = json.loads((_YUNIKORN / "verdicts.json").read_text())
_CONFORMANCE: list[dict[str, str]] = json.loads((_FIXTURES / "validator_conformance.json").read_text())


def _verdict(text: str, name: str) -> tuple[str, str]:
    try:
        config = load_queue_config(text, name)
    except QueueConfigError as exc:
        return str(exc), ""
    return "valid", config.source


def test_every_fixture_file_has_a_verdict() -> None:
    assert {row["file"] for row in _VERDICTS} == {path.name for path in _YUNIKORN.glob("*.yaml")}


@pytest.mark.parametrize("row", _VERDICTS, ids=[row["file"] for row in _VERDICTS])
def test_upstream_files(row: dict[str, Any]) -> None:
    verdict, read_from = _verdict((_YUNIKORN / row["file"]).read_text(), row["file"])
    assert verdict == row["verdict"]
    assert read_from == row.get("read_from", "")


@pytest.mark.parametrize("case", _CONFORMANCE, ids=[f"case{index}" for index in range(len(_CONFORMANCE))])
def test_generated_configurations_get_upstream_verdicts(case: dict[str, str]) -> None:
    assert _verdict(case["yaml"], "queues.yaml")[0] == case["upstream"]
