"""`apply --dry-run`: files, directories and Lists read as kubectl reads them, and the printed records replay to
the decisions the hand-written JSONL examples give."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import orjson
import pytest

from cli.apply.files import manifest_files
from cli.main import main
from streams.replay import Replayer
from streams.settings import Settings
from topics.objects.documents import parse_documents

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
EXAMPLE_FILES = ["clusters.yaml", "placement.yaml", "placementrule.yaml", "pods.yaml"]
START = "2026-11-23T10:00:00Z"
LATER = {"timestamp": "2026-11-23T10:01:00Z"}  # after the 20 s toleration of cluster3's taint


def replay(lines: list[bytes]) -> list[dict[str, Any]]:
    out = io.BytesIO()
    assert Replayer(Settings(), out, queue_config=EXAMPLES / "queues.yaml").run(lines) == 0
    return [orjson.loads(line) for line in out.getvalue().splitlines()]


def dry_run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[bytes], str]:
    code = main(["apply", "--dry-run", "--time", START, *args])
    captured = capsys.readouterr()
    return code, [line.encode() for line in captured.out.splitlines()], captured.err


def decided(records: list[dict[str, Any]], key: str) -> list[list[str]]:
    """The clusters (or rule decisions) of every decision published for `key`, in order."""
    answers = []
    for record in records:
        value = record["value"]
        if record["topic"] != "placement.decisions" or record["key"] != key or value is None:
            continue
        data = value["data"]
        pages = data.get("placementDecisions")
        names = [d["clusterName"] for p in pages for d in p["status"]["decisions"]] if pages is not None else None
        answers.append(names if names is not None else [d["name"] for d in data["decisions"]])
    return answers


def placed(records: list[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    return {
        r["value"]["data"]["applicationId"]: (r["value"]["data"]["queue"], r["value"]["data"]["rule"])
        for r in records
        if r["topic"] == "placement.decisions" and r["value"]["type"] == "application.placed.v1"
    }


def test_the_example_yaml_replays_to_the_decisions_of_the_jsonl_examples(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, err = dry_run(capsys, *(f"-f{EXAMPLES / name}" for name in EXAMPLE_FILES))
    assert code == 0, err
    assert len(lines) == 11 and "placement.cluster.open-cluster-management.io/web published (dry run)" in err
    from_yaml = replay([*lines, orjson.dumps(LATER)])
    from_jsonl = replay([*(EXAMPLES / "events.jsonl").read_bytes().splitlines(), orjson.dumps(LATER)])
    for key in ("Placement/apps/web", "PlacementRule/apps/db"):
        assert decided(from_yaml, key) == decided(from_jsonl, key), key
    assert decided(from_yaml, "Placement/apps/web") == [["cluster2", "cluster3"], ["cluster1", "cluster2"]]
    assert placed(from_yaml) == {
        "app-1": ("root.analytics", "provided"),
        "app-2": ("root.namespaces.payments", "tag"),
        "app-3": ("root.namespaces.default", "tag"),
    }


def test_a_directory_is_applied_and_its_queue_configuration_skipped(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, err = dry_run(capsys, "-f", str(EXAMPLES))
    assert code == 0
    assert len(lines) == 11
    assert "queues.yaml document 1 skipped: a YuniKorn queue configuration" in err


def test_a_bad_document_is_named_with_its_field_and_the_others_still_go(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    manifest = tmp_path / "mixed.yaml"
    manifest.write_text(
        (EXAMPLES / "placement.yaml").read_text()
        + "---\napiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\n"
        + "metadata: {name: broken, namespace: apps}\nspec: {numberOfClusters: many}\n"
    )
    code, lines, err = dry_run(capsys, "-f", str(manifest))
    assert code == 1
    assert [orjson.loads(line)["key"] for line in lines] == ["Placement/apps/web"]
    assert f"error: {manifest} document 2 (Placement broken): " in err
    assert "spec.numberOfClusters" in err


def test_documents_come_from_lists_multi_document_files_and_json(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(
        "kind: List\nitems:\n- {kind: ManagedCluster, metadata: {name: c1}}\n"
        "- {kind: ManagedCluster, metadata: {name: c2}}\n"
        "---\n---\nkind: Placement\nmetadata: {name: p, creationTimestamp: 2026-11-23T10:00:00Z}\n"
    )
    (tmp_path / "b.json").write_text('{"kind": "ManagedClusterSet", "metadata": {"name": "s"}}')
    (tmp_path / "notes.txt").write_text("not a manifest")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.yml").write_text("kind: ManagedCluster\nmetadata: {name: c3}\n")
    flat = [doc for source, raw in manifest_files(str(tmp_path)) for doc in parse_documents(source, raw)]
    assert [(Path(d.source).name, d.index, d.body["metadata"]["name"]) for d in flat] == [
        ("a.yaml", 1, "c1"),
        ("a.yaml", 2, "c2"),
        ("a.yaml", 3, "p"),
        ("b.json", 1, "s"),
    ]
    assert flat[2].body["metadata"]["creationTimestamp"] == "2026-11-23T10:00:00Z", "times stay text"
    deep = [name for name, _ in manifest_files(str(tmp_path), recursive=True)]
    assert [Path(name).name for name in deep] == ["a.yaml", "b.json", "c.yml"]


def test_an_unreachable_broker_is_one_line_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["apply", "-f", str(EXAMPLES / "placement.yaml"), "--bootstrap-servers", "127.0.0.1:9"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Kafka at 127.0.0.1:9 is not reachable") and err.count("\n") == 1
