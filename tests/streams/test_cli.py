"""The command line: explain after a replay, schemas for other languages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from streams.cli import main
from topics.events import EVENT_KINDS

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _explain(capsys: pytest.CaptureFixture[str], tmp_path: Path, *extra_lines: dict[str, Any]) -> dict[str, Any]:
    replay_input = tmp_path / "input.jsonl"
    lines = (EXAMPLES / "events.jsonl").read_bytes().splitlines() + [orjson.dumps(x) for x in extra_lines]
    replay_input.write_bytes(b"\n".join(lines) + b"\n")
    assert main(["explain", str(replay_input), "--placement", "apps/web"]) == 0
    report: dict[str, Any] = orjson.loads(capsys.readouterr().out)
    return report


@pytest.mark.parametrize(
    ("clock", "removed_by_taint"),
    [
        # the example toleration of cluster3's maintenance taint (added 10:00:00) lasts 20 s
        ("2026-11-23T10:00:19Z", []),
        ("2026-11-23T10:00:20Z", ["cluster3"]),
        ("2026-11-23T10:05:00Z", ["cluster3"]),
    ],
)
def test_explain_names_the_filter_that_removed_each_cluster(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, clock: str, removed_by_taint: list[str]
) -> None:
    report = _explain(capsys, tmp_path, {"timestamp": clock})
    assert report["placement"] == "Placement/apps/web"
    assert sorted(c for c, step in report["filteredBy"].items() if step == "TaintToleration") == removed_by_taint
    assert set(report["availableClusters"]) == {"cluster1", "cluster2", "cluster3", "cluster4"}
    last_step = report["filteredPipelineResults"][-1]["filteredClusters"]
    assert not set(removed_by_taint) & set(last_step)
    assert not set(removed_by_taint) & set(report["selected"])
    passing = report["passingScores"]  # every cluster that passed both filters, best first (K4)
    assert set(passing) == set(last_step) and set(report["selected"]) <= set(passing)
    assert list(passing.values()) == sorted(passing.values(), reverse=True)
    names = {p["name"] for p in report["prioritizeResults"]}
    assert {"Balance", "Steady", "ResourceAllocatableCPU"} <= names


def test_explain_of_an_unknown_placement_fails_with_a_message(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["explain", str(EXAMPLES / "events.jsonl"), "--placement", "apps/nothing"]) == 1
    assert "apps/nothing is not known" in capsys.readouterr().err


def test_explain_against_an_unreachable_processor_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--url", "http://127.0.0.1:9", "--placement", "apps/web"]) == 1
    assert "http://127.0.0.1:9" in capsys.readouterr().err


def test_schemas_writes_one_json_schema_per_event_type(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["schemas", "--out", str(tmp_path)]) == 0
    written = {p.name.removesuffix(".schema.json") for p in tmp_path.iterdir()}
    assert written == {kind.wire_type() for kind in EVENT_KINDS.values()}
    placed = orjson.loads((tmp_path / "application.placed.v1.schema.json").read_bytes())
    assert {"applicationId", "queue"} <= set(placed["properties"]["data"]["properties"])


_YUNIKORN = Path(__file__).resolve().parents[1] / "engine" / "queue" / "fixtures" / "yunikorn"
_CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata:
  name: yunikorn-configs
data:
  queues.yaml: |
    partitions:
      - name: default
        queues:
          - name: root
{extra}"""


@pytest.mark.parametrize(
    ("text", "code", "out", "err"),
    [
        (_CONFIGMAP.format(extra=""), 0, "is valid (read from ConfigMap yunikorn-configs, data key queues.yaml)", ""),
        (
            _CONFIGMAP.format(extra="            resources: {max: {memory: 1}}\n"),
            1,
            "",
            "ConfigMap yunikorn-configs, data key queues.yaml: root queue must not have resource limits set",
        ),
        (
            _CONFIGMAP.replace("queues.yaml: |", "other.yaml: |").format(extra=""),
            1,
            "",
            "ConfigMap yunikorn-configs has no queues.yaml entry in data or binaryData (keys: other.yaml)",
        ),
        ((_YUNIKORN / "core-config-queues.yaml").read_text(), 0, "cfg.yaml is valid\n", ""),
        (
            (_YUNIKORN / "core-config-limit.yaml").read_text(),
            1,
            "",
            "should not specify only one group limit that is using the wildcard",
        ),
        ("partitions:\n  - queues: []\n    nodesortpolicy: {type: random}\n", 1, "", "undefined policy: random"),
    ],
)
def test_check_config_reads_plain_files_and_configmaps(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, code: int, out: str, err: str
) -> None:
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    assert main(["check-config", str(path)]) == code
    captured = capsys.readouterr()
    assert out in captured.out
    assert err in captured.err
    if code:
        assert captured.err.startswith(f"invalid queue configuration {path}: ")
