"""Settings errors name the field and the problem; the queue-config file follows the reload rules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from streams.errors import SettingsError
from streams.queueconfig import QueueConfigFile, QueueConfigStartupError
from streams.settings import TopicNames, load_settings
from topics.names import TopicRole

GOOD = """partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: default
"""
OTHER_GOOD = GOOD.replace(
    "name: default\n    queues",
    "name: default\n    placementrules:\n      - name: user\n        create: true\n    queues",
)
BROKEN = GOOD.replace("submitacl", "submitACL")


def test_environment_settings_are_read_with_the_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLACEMENT_KAFKA__TASK_PARTITIONS", "6")
    monkeypatch.setenv("PLACEMENT_TOPICS__DECISIONS", "custom.decisions")
    settings = load_settings()
    assert settings.kafka.task_partitions == 6
    assert settings.topics.name(TopicRole.DECISIONS) == "custom.decisions"


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {
            "kafka": {"group_instance_id": "replica-1", "task_partitions": 6, "compression_type": "none"},
            "topics": TopicNames.prefixed("t.").model_dump(),
            "explain": ["Placement/apps/web", "Placement/apps/api"],
            "http_port": 0,
            "queue_config": "queues.yaml",
        },
    ],
    ids=["defaults", "everything-set"],
)
def test_settings_as_environment_read_back_the_same(
    monkeypatch: pytest.MonkeyPatch, overrides: dict[str, object]
) -> None:
    """`environment()` is what replicas are started with: the service must read back exactly these settings."""
    settings = load_settings(**overrides)
    for key, value in settings.environment().items():
        monkeypatch.setenv(key, value)
    assert load_settings() == settings


def test_kafka_bootstrap_servers_points_everything_at_an_existing_broker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PLACEMENT_KAFKA__BOOTSTRAP_SERVERS", raising=False)
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "10.0.0.1:9092")
    assert load_settings().kafka.bootstrap_servers == "10.0.0.1:9092"


@pytest.mark.parametrize(("value", "codec"), [(None, "zstd"), ("none", None), ("gzip", "gzip"), ("lz4", "lz4")])
def test_compression_defaults_to_zstd_and_none_means_uncompressed(
    monkeypatch: pytest.MonkeyPatch, value: str | None, codec: str | None
) -> None:
    if value is not None:
        monkeypatch.setenv("PLACEMENT_KAFKA__COMPRESSION_TYPE", value)
    assert load_settings().kafka.compression() == codec


@pytest.mark.parametrize(
    ("variable", "value", "field", "problem"),
    [
        ("PLACEMENT_KAFKA__TASK_PARTITIONS", "many", "kafka.task_partitions", "valid integer"),
        ("PLACEMENT_KAFKA__TASK_PARTITIONS", "0", "kafka.task_partitions", "greater than or equal to 1"),
        ("PLACEMENT_HTTP_PORT", "70000", "http_port", "less than or equal to 65535"),
        ("PLACEMENT_ADVISOR_TIMEOUT_SECONDS", "-1", "advisor_timeout_seconds", "greater than 0"),
        ("PLACEMENT_KAFKA__COMPRESSION_TYPE", "brotli", "kafka.compression_type", "'none', 'gzip', 'snappy'"),
        ("PLACEMENT_KAFKA__HEARTBEAT_INTERVAL_MS", "4000", "kafka.heartbeat_interval_ms", "a third of session_timeout"),
    ],
)
def test_bad_settings_name_the_field_and_the_problem(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, field: str, problem: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError) as error:
        load_settings()
    assert field in str(error.value)
    assert problem in str(error.value)
    assert variable in str(error.value)


def test_prefixed_topic_names_keep_every_role_distinct() -> None:
    names = TopicNames.prefixed("x.")
    assert len(names.roles()) == len(TopicRole)
    assert all(name.startswith("x.placement.") for name in names.roles())


def test_startup_error_names_the_file_and_the_problem(tmp_path: Path) -> None:
    path = tmp_path / "queues.yaml"
    path.write_text(BROKEN)
    with pytest.raises(QueueConfigStartupError) as error:
        QueueConfigFile(path).load_initial()
    assert str(error.value).startswith(f"invalid queue configuration {path}: ")
    assert "submitACL" in str(error.value)


def test_missing_file_is_a_startup_error(tmp_path: Path) -> None:
    with pytest.raises(QueueConfigStartupError, match="invalid queue configuration"):
        QueueConfigFile(tmp_path / "absent.yaml").load_initial()


def test_reload_applies_changes_ignores_identical_content_and_rejects_broken_files(tmp_path: Path) -> None:
    path = tmp_path / "queues.yaml"
    path.write_text(GOOD)
    watched = QueueConfigFile(path)
    watched.load_initial()
    assert watched.poll() is None
    path.write_text(BROKEN)
    rejected = watched.poll()
    assert rejected is not None and rejected.error is not None and rejected.config is None
    assert watched.poll() is None, "the same broken content is reported once"
    path.write_text(GOOD)
    assert watched.poll() is None, "back to the active content: nothing to do"
    path.write_text(OTHER_GOOD)
    applied = watched.poll()
    assert applied is not None and applied.error is None and applied.config is not None
    assert applied.sha256 == watched.active_sha256


@pytest.mark.parametrize(
    ("text", "code", "stream", "message"),
    [(GOOD, 0, "stdout", "is valid"), (BROKEN, 1, "stderr", "invalid queue configuration")],
)
def test_check_config_command(tmp_path: Path, text: str, code: int, stream: str, message: str) -> None:
    path = tmp_path / "queues.yaml"
    path.write_text(text)
    done = subprocess.run(
        [sys.executable, "-m", "streams", "check-config", str(path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == code
    assert message in getattr(done, stream)


def test_check_config_usage_error_exits_2() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "streams", "check-config"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
