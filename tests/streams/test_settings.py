"""Settings errors name the field and the problem; the queue-config file follows the reload rules."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from streams.errors import SettingsError
from streams.kafka.access import Grant, deployer_grants, processor_grants, submitter_grants
from streams.queueconfig import QueueConfigFile, QueueConfigStartupError
from streams.settings import Settings, TopicNames, load_settings
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
    monkeypatch.setenv("PLACEMENT_CEL_PLACEMENT_BUDGET", "1234")
    settings = load_settings()
    assert settings.kafka.task_partitions == 6
    assert settings.engine_settings().cel_placement_budget == 1234
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
            "http_max_connections": 8,
            "http_timeout_seconds": 0.5,
            "metrics_max_age_ms": 0,
            "queue_config": "queues.yaml",
            "cel_placement_budget": 1000,
            "accept_empty_state": True,
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


@pytest.mark.parametrize(("value", "accepted"), [(None, False), ("true", True), ("false", False)])
def test_an_empty_state_is_accepted_only_when_said(
    monkeypatch: pytest.MonkeyPatch, value: str | None, accepted: bool
) -> None:
    if value is None:
        monkeypatch.delenv("PLACEMENT_ACCEPT_EMPTY_STATE", raising=False)
    else:
        monkeypatch.setenv("PLACEMENT_ACCEPT_EMPTY_STATE", value)
    assert load_settings().accept_empty_state is accepted


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
        ("PLACEMENT_SWITCH_INTERVAL_MS", "0", "switch_interval_ms", "greater than 0"),
        ("PLACEMENT_SWITCH_INTERVAL_MS", "500", "switch_interval_ms", "less than or equal to 100"),
        ("PLACEMENT_ENGINE_WAIT_MS", "-1", "engine_wait_ms", "greater than or equal to 0"),
        ("PLACEMENT_ENGINE_WAIT_MS", "5000", "engine_wait_ms", "less than or equal to 1000"),
        ("PLACEMENT_CEL_PLACEMENT_BUDGET", "-1", "cel_placement_budget", "greater than or equal to 0"),
        ("PLACEMENT_HTTP_MAX_CONNECTIONS", "0", "http_max_connections", "greater than or equal to 1"),
        ("PLACEMENT_HTTP_MAX_HEADER_BYTES", "100", "http_max_header_bytes", "greater than or equal to 1024"),
        ("PLACEMENT_HTTP_TIMEOUT_SECONDS", "0", "http_timeout_seconds", "greater than 0"),
        ("PLACEMENT_METRICS_MAX_AGE_MS", "-1", "metrics_max_age_ms", "greater than or equal to 0"),
        ("PLACEMENT_HTTP_MAX_REQUESTS_PER_SECOND", "0", "http_max_requests_per_second", "greater than 0"),
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


SECURITY_DOC = Path(__file__).resolve().parents[2] / "docs" / "security.md"


def _documented_grants(section: str) -> set[tuple[str, str, str]]:
    """(resource, name, operation) rows of one ACL table in docs/security.md."""
    text = SECURITY_DOC.read_text().split(f"### {section}\n", 1)[1].split("\n### ", 1)[0]
    rows = [line.split("|")[1:4] for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    return {(kind.strip(), name.strip().removesuffix(" (prefixed)"), op.strip()) for kind, name, op in rows[1:]}


@pytest.mark.parametrize(
    ("section", "grants"),
    [
        ("Processor", processor_grants),
        ("Submitter", submitter_grants),
        ("Deployer", lambda s: deployer_grants(s, "<its group>")),
    ],
    ids=["processor", "submitter", "deployer"],
)
def test_documented_acls_are_the_ones_the_code_checks_and_the_tests_grant(
    section: str, grants: Callable[[Settings], list[Grant]]
) -> None:
    documented = {(k, n.replace("&lt;", "<").replace("&gt;", ">"), o) for k, n, o in _documented_grants(section)}
    assert documented == {(g.resource_type, g.name, g.operation) for g in grants(Settings())}


@pytest.mark.parametrize(
    ("env", "problem"),
    [
        ({"SECURITY_PROTOCOL": "SASL_SSL"}, "SCRAM-SHA-512 needs sasl_username"),
        ({"SECURITY_PROTOCOL": "SASL_SSL", "SASL_USERNAME": "u"}, "exactly one of sasl_password, sasl_password_file"),
        (
            {"SECURITY_PROTOCOL": "SASL_SSL", "SASL_USERNAME": "u", "SASL_PASSWORD": "p", "SASL_PASSWORD_FILE": "/x"},
            "exactly one of sasl_password, sasl_password_file",
        ),
        ({"SECURITY_PROTOCOL": "SASL_PLAINTEXT", "SASL_MECHANISM": "OAUTHBEARER"}, "OAUTHBEARER needs exactly one"),
        ({"SECURITY_PROTOCOL": "SSL", "SSL_CERT_FILE": "/c.pem"}, "needs both ssl_cert_file and ssl_key_file"),
        ({"SSL_CA_FILE": "/ca.pem"}, "security_protocol PLAINTEXT does not use TLS"),
        ({"SECURITY_PROTOCOL": "TLS"}, "kafka.security_protocol"),
        ({"SECURITY_PROTOCOL": "SASL_SSL", "SASL_MECHANISM": "GSSAPI"}, "kafka.sasl_mechanism"),
    ],
    ids=[
        "no-user",
        "no-password",
        "two-passwords",
        "no-token",
        "cert-without-key",
        "tls-file-plaintext",
        "bad-protocol",
        "bad-mechanism",
    ],
)
def test_incomplete_security_settings_stop_at_start_naming_what_is_missing(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], problem: str
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(f"PLACEMENT_KAFKA__{name}", value)
    with pytest.raises(SettingsError, match=re.escape(problem)):
        load_settings()


SECRET = "s3cr3t-Pa55word-value"


def test_secrets_stay_out_of_repr_errors_and_help_but_replicas_get_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """A password and an /explain token never show in a repr, a dump or an error; `environment()` (what replicas
    are started with) carries them as they are."""
    monkeypatch.setenv("PLACEMENT_KAFKA__SECURITY_PROTOCOL", "SASL_SSL")
    monkeypatch.setenv("PLACEMENT_KAFKA__SASL_USERNAME", "placement")
    monkeypatch.setenv("PLACEMENT_KAFKA__SASL_PASSWORD", SECRET)
    monkeypatch.setenv("PLACEMENT_EXPLAIN_TOKEN", SECRET + "-token")
    settings = load_settings()
    assert SECRET not in repr(settings) + str(settings.model_dump()) + settings.model_dump_json()
    monkeypatch.setenv("PLACEMENT_KAFKA__SASL_MECHANISM", "nope")
    with pytest.raises(SettingsError) as failure:
        load_settings()
    assert SECRET not in str(failure.value)
    monkeypatch.delenv("PLACEMENT_KAFKA__SASL_MECHANISM")
    env = settings.environment()
    assert (env["PLACEMENT_KAFKA__SASL_PASSWORD"], env["PLACEMENT_EXPLAIN_TOKEN"]) == (SECRET, SECRET + "-token")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert load_settings() == settings
    helps = subprocess.run(
        [sys.executable, "-m", "streams", "run", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert SECRET not in helps


def test_http_limits_come_from_the_settings() -> None:
    limits = load_settings(
        http_max_connections=3, http_max_header_bytes=2048, http_timeout_seconds=0.5, http_max_requests_per_second=7
    ).http_limits()
    assert (limits.max_connections, limits.max_header_bytes, limits.timeout_seconds) == (3, 2048, 0.5)
    assert limits.max_requests_per_second == 7
