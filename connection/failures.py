"""One clear sentence for a failure to connect, authenticate or be authorised, and a probe that finds it.

aiokafka reports a refused login or an untrusted certificate as "Unable to bootstrap" and a missing ACL deep
inside a client, often retried and logged at every attempt; every program that connects (the service, the
example advisors, the command-line tools) turns such a failure into one message naming the principal and the fix.
"""

from __future__ import annotations

import ssl

from aiokafka.errors import (
    AuthenticationFailedError,
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    IllegalSaslStateError,
    KafkaError,
    SaslAuthenticationFailed,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailed,
    UnsupportedSaslMechanismError,
)

from connection.protocol import open_connection
from connection.security import connection_options
from connection.settings import KafkaSettings

__all__ = ["describe_failure", "principal_of", "probe_connection", "transactional_id_prefix"]


def transactional_id_prefix(group_id: str) -> str:
    """The prefix of every task producer's transactional id (see streams/kafka/tasks.py)."""
    return f"{group_id}-tasks-"


def principal_of(kafka: KafkaSettings) -> str:
    """The principal the broker most likely sees, for messages; a TLS certificate's is the broker's mapping of its
    distinguished name, unknown here."""
    if kafka.security_protocol.startswith("SASL_") and kafka.sasl_mechanism != "OAUTHBEARER" and kafka.sasl_username:
        return f"User:{kafka.sasl_username}"
    if kafka.ssl_cert_file is not None:
        return "the principal of the client certificate"
    if kafka.security_protocol.startswith("SASL_"):
        return "the principal of the OAUTHBEARER token"
    return "User:ANONYMOUS"


def describe_failure(exc: BaseException, kafka: KafkaSettings, resource: str = "") -> str | None:
    """One clear sentence for an authentication, TLS or authorization failure; None for anything else (a broker
    that is away, a timeout), which is retried as before."""
    who = principal_of(kafka)
    on = f" on {resource}" if resource else ""
    if isinstance(exc, ssl.SSLCertVerificationError):
        return (
            f"TLS: the broker's certificate is not trusted ({exc.verify_message}); set ssl_ca_file to the CA that "
            "signed it"
        )
    if isinstance(exc, ssl.SSLError):
        return f"TLS handshake with the broker failed ({exc.reason or exc.__class__.__name__}); check ssl_* settings"
    if isinstance(exc, SaslAuthenticationFailed | AuthenticationFailedError | IllegalSaslStateError):
        return (
            f"SASL {kafka.sasl_mechanism} authentication of {who} failed: wrong username or password (or token), "
            "or the user does not exist on the broker"
        )
    if isinstance(exc, UnsupportedSaslMechanismError):
        return f"the broker does not enable SASL mechanism {kafka.sasl_mechanism} on this listener"
    if isinstance(exc, TopicAuthorizationFailedError):
        return f"Kafka denies {who} a topic operation{on}: grant Read or Write on the topic (see docs/security.md)"
    if isinstance(exc, GroupAuthorizationFailedError):
        return f"Kafka denies {who} the consumer group {kafka.group_id}: grant Read on Group {kafka.group_id}"
    if isinstance(exc, TransactionalIdAuthorizationFailed):
        prefix = transactional_id_prefix(kafka.group_id)
        return f"Kafka denies {who} its transactions: grant Write on TransactionalId prefix {prefix}"
    if isinstance(exc, ClusterAuthorizationFailedError):
        return f"Kafka denies {who} a cluster operation{on}: grant IdempotentWrite on Cluster (brokers before 2.8)"
    return None


async def probe_connection(kafka: KafkaSettings, timeout_ms: int = 10_000) -> BaseException | None:
    """Open (and close) one connection to the first bootstrap server that accepts TCP, with authentication; the
    error it raised or None. aiokafka's own bootstrap reports such failures only as "Unable to bootstrap"."""
    options = connection_options(kafka)
    options.pop("bootstrap_servers")
    failure: BaseException | None = None
    for address in kafka.bootstrap_servers.split(","):
        host, _, port = address.strip().rpartition(":")
        try:
            conn = await open_connection(host.strip("[]"), int(port), timeout_ms, options)
        except (OSError, KafkaError, TimeoutError) as exc:
            failure = exc.__cause__ if isinstance(exc.__cause__, ssl.SSLError) else exc
            if describe_failure(failure, kafka) is not None:
                return failure  # authentication and TLS fail the same way on every broker
            continue
        conn.close()
        return None
    return failure
