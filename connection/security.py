"""The one mapping of the security settings onto aiokafka's client arguments.

Every client the processor, the example advisors, the command-line tools and the benchmarks create takes its
connection arguments from `connection_options`, so TLS, SASL and OAUTHBEARER behave the same everywhere and no
client can be left speaking plaintext by mistake. Secrets are read from their files when a client is created (a
rotated Kubernetes secret reaches the next client) and never put into a log line, an error or a repr.
"""

from __future__ import annotations

import asyncio
import logging
import shlex
import ssl
from pathlib import Path
from typing import Any

from aiokafka.abc import AbstractTokenProvider
from aiokafka.helpers import create_ssl_context

from connection.errors import CredentialsError
from connection.settings import KafkaSettings

__all__ = ["CredentialsError", "TokenProvider", "connection_options", "ssl_context"]

_TOKEN_COMMAND_SECONDS = 30.0


class _SaslRedaction(logging.Filter):
    """aiokafka logs every request at DEBUG, and a SASL/PLAIN authenticate request carries the password in
    clear (SCRAM's carry proofs and nonces): such requests and their answers are logged by name only."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and any(type(a).__name__.startswith("SaslAuth") for a in record.args):
            record.args = tuple(
                f"{type(a).__name__}(redacted)" if type(a).__name__.startswith("SaslAuth") else a for a in record.args
            )
        return True


logging.getLogger("aiokafka.conn").addFilter(_SaslRedaction())


def _read_secret(path: Path, setting: str) -> str:
    """A mounted secret's content without the trailing newline editors and `kubectl create secret` leave."""
    try:
        value = path.read_text(encoding="utf-8").rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise CredentialsError(f"cannot read {setting} {path}: {exc.__class__.__name__}") from None
    if not value:
        raise CredentialsError(f"{setting} {path} is empty")
    return value


def ssl_context(kafka: KafkaSettings) -> ssl.SSLContext:
    """Verifying context: the CA file (else the system store), the client certificate for mutual TLS, and
    hostname checking unless turned off."""
    for setting in ("ssl_ca_file", "ssl_cert_file", "ssl_key_file"):
        path = getattr(kafka, setting)
        if path is not None and not Path(path).is_file():
            raise CredentialsError(f"{setting} {path} is not a readable file")
    password = (
        _read_secret(kafka.ssl_key_password_file, "ssl_key_password_file") if kafka.ssl_key_password_file else None
    )
    try:
        context: ssl.SSLContext = create_ssl_context(
            cafile=kafka.ssl_ca_file, certfile=kafka.ssl_cert_file, keyfile=kafka.ssl_key_file, password=password
        )
    except (ssl.SSLError, OSError) as exc:
        # the reason names the problem (e.g. a key that does not match its certificate), not the key's bytes
        reason = getattr(exc, "reason", None) or exc.__class__.__name__
        raise CredentialsError(f"cannot load the TLS files of the Kafka settings: {reason}") from None
    context.check_hostname = kafka.ssl_check_hostname
    return context


class TokenProvider(AbstractTokenProvider):  # type: ignore[misc]
    """OAUTHBEARER tokens from a file (re-read every time, as a sidecar refreshes it) or from a command's stdout."""

    def __init__(self, token_file: Path | None, command: str | None) -> None:
        self._file = token_file
        self._command = shlex.split(command) if command else None

    def __repr__(self) -> str:
        source = f"file {self._file}" if self._file else f"command {self._command[0] if self._command else '?'}"
        return f"TokenProvider({source})"

    async def token(self) -> str:
        if self._file is not None:
            return await asyncio.to_thread(_read_secret, self._file, "sasl_oauth_token_file")
        assert self._command is not None
        try:
            process = await asyncio.create_subprocess_exec(
                *self._command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
            )
            out, _ = await asyncio.wait_for(process.communicate(), _TOKEN_COMMAND_SECONDS)
        except (OSError, TimeoutError) as exc:
            raise CredentialsError(f"sasl_oauth_token_command {self._command[0]} failed: {exc!r}") from None
        token = out.decode(errors="replace").strip()
        if process.returncode != 0 or not token:
            raise CredentialsError(
                f"sasl_oauth_token_command {self._command[0]} exited {process.returncode} without a token"
            )
        return token


def connection_options(kafka: KafkaSettings) -> dict[str, Any]:
    """Keyword arguments for any aiokafka client: bootstrap servers, protocol, TLS context and SASL credentials."""
    options: dict[str, Any] = {
        "bootstrap_servers": kafka.bootstrap_servers,
        "security_protocol": kafka.security_protocol,
    }
    if kafka.security_protocol in ("SSL", "SASL_SSL"):
        options["ssl_context"] = ssl_context(kafka)
    if kafka.security_protocol.startswith("SASL_"):
        options["sasl_mechanism"] = kafka.sasl_mechanism
        if kafka.sasl_mechanism == "OAUTHBEARER":
            options["sasl_oauth_token_provider"] = TokenProvider(
                kafka.sasl_oauth_token_file, kafka.sasl_oauth_token_command
            )
        else:
            options["sasl_plain_username"] = kafka.sasl_username
            options["sasl_plain_password"] = (
                _read_secret(kafka.sasl_password_file, "sasl_password_file")
                if kafka.sasl_password_file
                else kafka.sasl_password.get_secret_value()
                if kafka.sasl_password
                else None
            )
    return options
