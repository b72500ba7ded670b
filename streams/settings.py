"""Service settings from the environment (prefix PLACEMENT_, nested with __), a .env file and CLI flags."""

from __future__ import annotations

import json
import os
import re
import socket
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
)
from pydantic_settings import BaseSettings

from connection.errors import SettingsError
from connection.settings import (
    ENVIRONMENT,
    KafkaSettings,
    environment_variable,
    invalid_settings,
    with_bootstrap_fallback,
)
from engine.core import CEL_PLACEMENT_BUDGET, EngineSettings
from streams.http_server import HttpLimits
from topics.names import TOPIC_SPECS, TopicRole

__all__ = ["KafkaSettings", "Settings", "TopicNames", "load_settings", "stable_identity"]


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

    model_config = ENVIRONMENT

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
                    env[environment_variable(*location)] = inner if isinstance(inner, str) else json.dumps(inner)
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
    try:
        settings = Settings(**with_bootstrap_fallback(overrides))
    except ValidationError as exc:
        raise invalid_settings(exc) from exc
    identity = stable_identity()
    if settings.kafka.group_instance_id is None and identity is not None:
        kafka = settings.kafka.model_copy(update={"group_instance_id": identity})
        settings = settings.model_copy(update={"kafka": kafka})
    return settings
