"""The programs that only connect (advisors, deployers) read the Kafka settings as the service does: the same
variables, the same errors, and nothing of the service's other settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from connection.errors import SettingsError
from connection.settings import load_kafka_settings
from streams.settings import load_settings


@pytest.fixture(autouse=True)
def _no_dotenv(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no .env of the checkout


@pytest.mark.parametrize(
    "environment",
    [
        {"PLACEMENT_KAFKA__SECURITY_PROTOCOL": "SASL_SSL"},
        {"PLACEMENT_KAFKA__SESSION_TIMEOUT_MS": "10"},
        {"PLACEMENT_KAFKA__SSL_CA_FILE": "/ca.pem"},
    ],
    ids=["sasl-without-user", "below-bound", "tls-file-without-tls"],
)
def test_a_bad_kafka_setting_is_the_same_error_as_the_service_s(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str]
) -> None:
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError) as service:
        load_settings()
    with pytest.raises(SettingsError) as connecting:
        load_kafka_settings()
    assert str(connecting.value) == str(service.value)
    assert "PLACEMENT_KAFKA" in str(connecting.value)


def test_the_service_s_other_settings_do_not_concern_a_program_that_connects(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLACEMENT_HTTP_PORT", "not a port")
    monkeypatch.setenv("PLACEMENT_KAFKA__SASL_USERNAME", "advisor")
    with pytest.raises(SettingsError, match="PLACEMENT_HTTP_PORT"):
        load_settings()
    assert load_kafka_settings().sasl_username == "advisor"


@pytest.mark.parametrize(
    ("environment", "bootstrap"),
    [
        ({}, "127.0.0.1:9092"),
        ({"KAFKA_BOOTSTRAP_SERVERS": "k:1"}, "k:1"),
        ({"KAFKA_BOOTSTRAP_SERVERS": "k:1", "PLACEMENT_KAFKA__BOOTSTRAP_SERVERS": "p:2"}, "p:2"),
    ],
)
def test_bootstrap_servers_are_read_as_the_service_reads_them(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], bootstrap: str
) -> None:
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    monkeypatch.delenv("PLACEMENT_KAFKA__BOOTSTRAP_SERVERS", raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert load_kafka_settings().bootstrap_servers == bootstrap == load_settings().kafka.bootstrap_servers
