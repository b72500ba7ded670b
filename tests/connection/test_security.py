"""The connection settings map onto aiokafka's client arguments: one mapping for every client of every program."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from connection.security import CredentialsError, connection_options
from connection.settings import KafkaSettings


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({}, {"security_protocol": "PLAINTEXT"}),
        (
            {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN", "sasl_username": "u"},
            {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN", "sasl_plain_username": "u"},
        ),
        (
            {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_command": "x"},
            {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "OAUTHBEARER"},
        ),
    ],
    ids=["plaintext", "plain-from-file", "oauth-command"],
)
def test_settings_map_onto_aiokafka_arguments(
    tmp_path: Path, settings: dict[str, str], expected: dict[str, str]
) -> None:
    password = tmp_path / "password"
    password.write_text("from-file\n")
    extra = {"sasl_password_file": password} if settings.get("sasl_mechanism") == "PLAIN" else {}
    options = connection_options(KafkaSettings(bootstrap_servers="b:1", **settings, **extra))
    assert options["bootstrap_servers"] == "b:1"
    assert {k: options[k] for k in expected} == expected
    assert options.get("sasl_plain_password") == ("from-file" if extra else None)
    assert ("sasl_oauth_token_provider" in options) == (settings.get("sasl_mechanism") == "OAUTHBEARER")
    assert "ssl_context" not in options


def test_tls_context_verifies_and_checks_hostnames_unless_told_not_to(tmp_path: Path) -> None:
    default = connection_options(KafkaSettings(security_protocol="SSL"))["ssl_context"]
    relaxed = connection_options(KafkaSettings(security_protocol="SSL", ssl_check_hostname=False))["ssl_context"]
    assert (default.verify_mode, default.check_hostname) == (ssl.CERT_REQUIRED, True)
    assert (relaxed.verify_mode, relaxed.check_hostname) == (ssl.CERT_REQUIRED, False)
    with pytest.raises(CredentialsError, match=r"ssl_ca_file .* is not a readable file"):
        connection_options(KafkaSettings(security_protocol="SSL", ssl_ca_file=tmp_path / "missing.pem"))
