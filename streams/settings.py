"""Service settings from the environment (prefix PLACEMENT_, nested with __), a .env file and CLI flags."""

from __future__ import annotations

import json
import os
import re
import socket
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from engine.core import CEL_PLACEMENT_BUDGET, EngineSettings
from streams.errors import SettingsError
from streams.http_server import HttpLimits
from topics.names import TOPIC_SPECS, TopicRole

__all__ = ["KafkaSettings", "Settings", "TopicNames", "load_settings", "stable_identity"]


class KafkaSettings(BaseModel):
    """Connection and consumer-group settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    bootstrap_servers: str = "127.0.0.1:9092"
    """Comma-separated host:port list (env KAFKA_BOOTSTRAP_SERVERS is honoured too)."""
    group_id: str = "placement"
    group_instance_id: str | None = None
    """Static membership: a stable id per replica avoids a rebalance on restart, and a replica restarted after a
    crash gets its tasks back at once instead of after the session timeout. Unset, a Kubernetes StatefulSet
    pod uses its name (`<set>-<ordinal>`, stable across restarts); elsewhere the member is dynamic."""
    client_id: str = "placement-stream"
    task_partitions: int = Field(default=3, ge=1, le=256)
    """Partitions of every co-partitioned topic; one transactional producer per owned partition."""
    replication_factor: int = Field(default=1, ge=1)
    session_timeout_ms: int = Field(default=6000, ge=1000)
    """How long the group waits for a silent member: after a crash of a dynamic member, its tasks move only then.
    6 s is the broker's default minimum (`group.min.session.timeout.ms`)."""
    heartbeat_interval_ms: int = Field(default=1000, ge=100)
    """How often the group member reports to the coordinator, and so how soon it learns of a rebalance: when an
    instance joins, the others keep every task until their next heartbeat. aiokafka's default of 3 s made a
    second instance wait seconds for its share; must stay below a third of the session timeout."""
    transaction_timeout_ms: int = Field(default=60_000, ge=1000)
    group_offsets_interval_ms: int = Field(default=1000, ge=0)
    """How often a task's transaction also commits its consumed offsets to the consumer group (0: every one).
    Every transaction records them in the task's changelog partition, which is where a new owner starts (the
    later of the two), so the group's offsets serve monitoring and trail by up to this much while a task runs; a
    graceful stop commits them exactly. In a transaction they cost two round trips before the task's records can
    be sent (AddOffsetsToTxn, TxnOffsetCommit): at 1,000 submissions/s, p50 25.4 ms and p99 53.3 ms with them in
    every transaction, 18.5 ms and 39.4 ms at 1 s (medians of 3 runs)."""
    max_batch_records: int = Field(default=1000, ge=1)
    poll_timeout_ms: int = Field(default=20, ge=1)
    """Longest wait for subject records before the inventory tables are read again: it bounds how long an
    inventory change waits to be applied (at 100 ms, up to 100 ms were added to every change). The price is
    idle CPU: an idle processor used 5.6% of a core at 20 ms and 3.9% at 100 ms on the benchmark machine."""
    fetch_max_wait_ms: int = Field(default=10, ge=1, le=500)
    """How long the broker may hold the subject consumer's fetch when it has nothing new. aiokafka keeps one fetch
    in flight per broker, for the partitions that had nothing buffered when it was sent; a record arriving on
    another partition waits for that fetch to end. At the client default (500 ms) this was most of a decision's
    latency at low rates (queued 278 ms on average at 100 submissions/s, 82 ms at 10 ms)."""
    compression_type: Literal["none", "gzip", "snappy", "lz4", "zstd"] = "zstd"
    """Codec of every record batch the processor produces. A decision of a few hundred clusters is tens of
    kilobytes of repetitive JSON that zstd shrinks several times; consumers need zstd support (Kafka 2.1+
    clients), else choose `none` or `gzip`."""

    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    """How every client connects: SASL_SSL for SCRAM or PLAIN over TLS (Strimzi, Amazon MSK, Confluent Cloud), SSL
    for TLS alone or mutual TLS (with `ssl_cert_file`), the SASL_PLAINTEXT and PLAINTEXT forms only on trusted
    networks."""
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"] = "SCRAM-SHA-512"
    """Used with the SASL_* protocols."""
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    """Never logged or printed; prefer `sasl_password_file`, which is read again at every connection set-up, so a
    rotated Kubernetes secret is picked up by the next client."""
    sasl_password_file: Path | None = None
    sasl_oauth_token_file: Path | None = None
    """OAUTHBEARER: a file holding the current token (re-read for every new connection, as a sidecar refreshes it)."""
    sasl_oauth_token_command: str | None = None
    """OAUTHBEARER: a command (no shell) that prints a token on stdout, run for every new connection."""
    ssl_ca_file: Path | None = None
    """PEM bundle of the CAs that sign the brokers' certificates; unset, the system's trust store is used."""
    ssl_cert_file: Path | None = None
    """PEM client certificate (chain) for mutual TLS; needs `ssl_key_file`."""
    ssl_key_file: Path | None = None
    ssl_key_password_file: Path | None = None
    """For an encrypted `ssl_key_file`."""
    ssl_check_hostname: bool = True
    """Whether the broker's certificate must name the host connected to; turn off only for brokers reached through
    addresses their certificates do not list."""

    @model_validator(mode="after")
    def _security_is_complete(self) -> KafkaSettings:
        """Catch half-configured security at start, naming what is missing, instead of as a broker error later."""
        sasl = self.security_protocol.startswith("SASL_")
        tls = self.security_protocol.endswith("SSL")
        problems: list[str] = []
        if sasl and self.sasl_mechanism == "OAUTHBEARER":
            if (self.sasl_oauth_token_file is None) == (self.sasl_oauth_token_command is None):
                problems.append("OAUTHBEARER needs exactly one of sasl_oauth_token_file, sasl_oauth_token_command")
        elif sasl:
            if not self.sasl_username:
                problems.append(f"{self.sasl_mechanism} needs sasl_username")
            if (self.sasl_password is None) == (self.sasl_password_file is None):
                problems.append(f"{self.sasl_mechanism} needs exactly one of sasl_password, sasl_password_file")
        if (self.ssl_cert_file is None) != (self.ssl_key_file is None):
            problems.append("mutual TLS needs both ssl_cert_file and ssl_key_file")
        tls_files = (self.ssl_ca_file, self.ssl_cert_file, self.ssl_key_file, self.ssl_key_password_file)
        if not tls and any(tls_files):
            problems.append(f"ssl_* files are set but security_protocol {self.security_protocol} does not use TLS")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @field_validator("heartbeat_interval_ms")
    @classmethod
    def _heartbeat_within_session(cls, value: int, info: ValidationInfo) -> int:
        session = info.data.get("session_timeout_ms")
        if session is not None and value * 3 > session:
            raise ValueError(f"must be at most a third of session_timeout_ms ({session})")
        return value

    def compression(self) -> str | None:
        """The codec as the Kafka client takes it."""
        return None if self.compression_type == "none" else self.compression_type


class TopicNames(BaseModel):
    """Actual topic names per role."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    submissions: str = TOPIC_SPECS[TopicRole.SUBMISSIONS].default_name
    cluster_status: str = TOPIC_SPECS[TopicRole.CLUSTER_STATUS].default_name
    taints: str = TOPIC_SPECS[TopicRole.TAINTS].default_name
    advisor_recommendations: str = TOPIC_SPECS[TopicRole.ADVISOR_RECOMMENDATIONS].default_name
    advisor_requests: str = TOPIC_SPECS[TopicRole.ADVISOR_REQUESTS].default_name
    decisions: str = TOPIC_SPECS[TopicRole.DECISIONS].default_name
    changelog: str = TOPIC_SPECS[TopicRole.CHANGELOG].default_name
    dead_letter: str = TOPIC_SPECS[TopicRole.DEAD_LETTER].default_name

    def name(self, role: TopicRole) -> str:
        """The topic name of a role."""
        return str(getattr(self, role.value.replace("-", "_")))

    def roles(self) -> dict[str, TopicRole]:
        """Topic name -> role."""
        return {self.name(role): role for role in TopicRole}

    @classmethod
    def prefixed(cls, prefix: str) -> TopicNames:
        """Default names with a prefix, e.g. for isolated test runs."""
        return cls(**{role.value.replace("-", "_"): prefix + spec.default_name for role, spec in TOPIC_SPECS.items()})


class Settings(BaseSettings):
    """Everything the service reads at start."""

    model_config = SettingsConfigDict(
        env_prefix="PLACEMENT_", env_nested_delimiter="__", env_file=".env", extra="ignore", frozen=True
    )

    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    topics: TopicNames = Field(default_factory=TopicNames)
    queue_config: Path | None = None
    """YuniKorn `partitions:` file; without one every application is rejected with a reason saying so."""
    queue_config_poll_seconds: float = Field(default=1.0, gt=0)
    advisor_timeout_seconds: float = Field(default=30.0, gt=0)
    resync_seconds: float = Field(default=600.0, ge=0)
    explain: list[str] = Field(default_factory=list)
    """Placement subject keys whose decision events carry explain data."""
    cel_placement_budget: int = Field(default=CEL_PLACEMENT_BUDGET, ge=0)
    """CEL cost units one evaluation of one Placement may spend over all its clusters; past it the remaining
    clusters are stopped (no match) and the placement gets a Warning."""
    http_host: str = "127.0.0.1"
    http_port: int = Field(default=8080, ge=0, le=65535)
    """Port of /metrics, /healthz, /livez and /readyz; 0 disables the endpoint."""
    advertised_url: str | None = Field(default=None, pattern=r"^https?://[^\s/]+(/[^\s]*)?$")
    """Where the other instances and `describe` reach this instance's HTTP endpoint (carried in the group's member
    metadata, platform P17); unset: `http://<http_host>:<http_port>`, with the host's name when listening on
    every address. In Kubernetes, the pod's stable DNS name."""
    explain_token: SecretStr | None = None
    """When set (or `explain_token_file`), /explain answers only requests with `Authorization: Bearer <token>`:
    it shows placement internals, while /metrics, /healthz, /livez and /readyz stay open to probes and scrapers."""
    explain_token_file: Path | None = None
    """A file holding the /explain token (a mounted secret), read at start."""
    http_max_connections: int = Field(default=64, ge=1, le=10_000)
    """Open connections the HTTP endpoint serves at once; past it a client gets 503 at once."""
    http_max_header_bytes: int = Field(default=16_384, ge=1024, le=1_048_576)
    """Bound on a request's line and headers together; past it the answer is 431."""
    http_timeout_seconds: float = Field(default=5.0, gt=0, le=300)
    """Time a client has to send its request, and again to take the answer; then the connection is closed."""
    http_max_requests_per_second: float = Field(default=100.0, gt=0, le=100_000)
    """Requests the HTTP endpoint answers per second at most, evenly spaced (probes and scrapers need a few);
    clients asking faster wait their turn, so their cost to the process stays bounded."""
    metrics_max_age_ms: float = Field(default=1000.0, ge=0, le=60_000)
    """/metrics serves a page rendered at most this long ago, so many scrapers cost one rendering."""
    log_level: str = "INFO"
    shutdown_timeout_seconds: float = Field(default=20.0, gt=0)
    """Bound on the whole graceful stop; the batch in flight gets at most `stop_grace_seconds` of it."""
    stop_grace_seconds: float = Field(default=1.0, ge=0)
    """How long a stop waits for the batch in flight to commit before abandoning it (its records are read again
    by the next owner, exactly once), so SIGTERM or Ctrl-C ends the process within about two seconds."""
    max_task_aborts: int = Field(default=3, ge=1)
    """Times one record may abort its task's transaction (the broker refusing its outputs) before it is
    dead-lettered instead of tried again."""
    accept_empty_state: bool = False
    """Start although the changelog or decisions topic is missing or empty while the consumer group has
    committed offsets (the state was deleted on purpose); without it such a start is refused. Set it for one
    start only: the check protects every later one."""
    liveness_timeout_seconds: float = Field(default=60.0, gt=0)
    """/livez turns false when the processing loop has made no progress for this long, so an orchestrator
    restarts a process that is truly stuck."""
    gc_threshold: int = Field(default=50_000, ge=0)
    """Young-generation threshold of Python's cyclic garbage collector (see streams/tuning.py); 0 keeps
    Python's default of 700."""
    switch_interval_ms: float = Field(default=1.0, gt=0, le=100)
    """How often the engine's worker thread hands the GIL to the event loop (see streams/tuning.py); Python's
    default is 5 ms, which every Kafka round trip during a batch waited for."""
    engine_wait_ms: float = Field(default=100.0, ge=0, le=1000)
    """How long the event loop waits for the engine's next hand-over before it serves Kafka and the probes
    again (see streams/engine_thread.py): waiting spares the two threads handing the GIL to and fro, and this
    bounds how late a heartbeat or a probe answer can be. 0: the loop never waits (serves Kafka throughout)."""

    def environment(self) -> dict[str, str]:
        """These settings as the PLACEMENT_* variables `placement-stream run` reads, e.g. to start replicas;
        unset (None) fields are left out, lists go as JSON."""
        env: dict[str, str] = {}
        dumped = self.model_dump(mode="json")
        for field, secret in self.kafka:  # JSON shows secrets masked; a replica needs them as they are
            if isinstance(secret, SecretStr):
                dumped["kafka"][field] = secret.get_secret_value()
        if self.explain_token is not None:
            dumped["explain_token"] = self.explain_token.get_secret_value()
        for name, value in dumped.items():
            fields = [((name, f), v) for f, v in value.items()] if isinstance(value, dict) else [((name,), value)]
            for location, inner in fields:
                if inner is not None:
                    env[_variable(*location)] = inner if isinstance(inner, str) else json.dumps(inner)
        return env

    def explain_bearer(self) -> str | None:
        """The /explain token, from the file if one is named; None leaves /explain open."""
        if self.explain_token_file is not None:
            try:
                token = self.explain_token_file.read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise SettingsError(f"explain_token_file {self.explain_token_file}: {exc.strerror}") from None
            if not token:
                raise SettingsError(f"explain_token_file {self.explain_token_file} is empty")
            return token
        return self.explain_token.get_secret_value() if self.explain_token else None

    def advertised(self) -> str | None:
        """The advertised HTTP address (see `advertised_url`); None without an endpoint."""
        if self.advertised_url:
            return self.advertised_url.rstrip("/")
        if not self.http_port:
            return None
        host = socket.gethostname() if self.http_host in ("0.0.0.0", "::", "") else self.http_host
        return f"http://[{host}]:{self.http_port}" if ":" in host else f"http://{host}:{self.http_port}"

    def http_limits(self) -> HttpLimits:
        """The HTTP endpoint's bounds."""
        return HttpLimits(
            max_connections=self.http_max_connections,
            max_header_bytes=self.http_max_header_bytes,
            timeout_seconds=self.http_timeout_seconds,
            max_requests_per_second=self.http_max_requests_per_second,
        )

    def engine_settings(self) -> EngineSettings:
        """The pure subset the engines see."""
        return EngineSettings(
            advisor_timeout_seconds=self.advisor_timeout_seconds,
            resync_seconds=self.resync_seconds,
            explain=frozenset(self.explain),
            cel_placement_budget=self.cel_placement_budget,
        )


def stable_identity(environ: dict[str, str] | None = None) -> str | None:
    """The pod name when running as a Kubernetes StatefulSet member (`<set>-<ordinal>`), which survives restarts;
    None elsewhere, where a default identity could collide between replicas."""
    env = os.environ if environ is None else environ
    name = env.get("HOSTNAME", "")
    if "KUBERNETES_SERVICE_HOST" in env and re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?-[0-9]+", name):
        return name
    return None


def load_settings(**overrides: Any) -> Settings:
    """Build settings; a bad value becomes a SettingsError naming the source, the field and the problem."""
    kafka_env = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if kafka_env and "PLACEMENT_KAFKA__BOOTSTRAP_SERVERS" not in os.environ:
        given = dict(overrides.pop("kafka", {}) or {})
        given.setdefault("bootstrap_servers", kafka_env)
        overrides["kafka"] = given
    try:
        settings = Settings(**overrides)
    except ValidationError as exc:
        problems = []
        for item in exc.errors():
            field = ".".join(str(p) for p in item["loc"])
            env = _variable(*item["loc"])
            problems.append(f"{field} (env {env} or .env): {item['msg']}")
        raise SettingsError("invalid settings: " + "; ".join(problems)) from exc
    identity = stable_identity()
    if settings.kafka.group_instance_id is None and identity is not None:
        kafka = settings.kafka.model_copy(update={"group_instance_id": identity})
        settings = settings.model_copy(update={"kafka": kafka})
    return settings


def _variable(*location: object) -> str:
    """The environment variable of a settings field, e.g. `kafka`, `task_partitions` ->
    PLACEMENT_KAFKA__TASK_PARTITIONS."""
    return "PLACEMENT_" + "__".join(str(part).upper() for part in location)
