"""Run a single-node KRaft Kafka broker (combined broker + controller) as a local JVM process.

Everything lives in one data dir: the two config files, ``state.json`` (ports + cluster id, so a restart on
the same dir reuses the controller address that ``--standalone`` recorded in the metadata log), ``broker.pid``
(so a later CLI call can stop a broker started in the background), ``broker.log`` and the Kafka log dir.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from localbroker.errors import BrokerError
from localbroker.fetch import ensure_kafka_libs
from localbroker.procs import free_ports, log_tail, owns_pid, port_is_free, process_alive, run_sync
from localbroker.readiness import wait_until_ready
from localbroker.secure import SecureFiles, scram_arguments, secure_properties

__all__ = ["BrokerError", "BrokerState", "LocalBroker", "broker_status", "new_cluster_id", "wait_until_ready"]

HOST = "127.0.0.1"
STATE_FILE = "state.json"
PID_FILE = "broker.pid"
LOG_FILE = "broker.log"
KAFKA_LOG_DIR = "kafka-logs"
JVM_FLAGS = ("-Xms256m", "-Xmx512m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true")

LOG4J2_PROPERTIES = """\
appender.out.type = Console
appender.out.name = STDOUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.out.ref = STDOUT
logger.server.name = kafka.server
logger.server.level = INFO
"""

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BrokerState:
    """What must survive a restart of the same data dir."""

    broker_port: int
    controller_port: int
    cluster_id: str
    ssl_port: int | None = None
    """Set for a secured broker: the mutual-TLS listener (``broker_port`` is then SASL_SSL)."""

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.broker_port}"

    @property
    def secure(self) -> bool:
        return self.ssl_port is not None


def new_cluster_id() -> str:
    """A Kafka-style cluster id: 16 random bytes, base64url, no padding, never starting with '-'."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cid.startswith("-"):
            return cid


def _server_properties(state: BrokerState, log_dir: Path, secure: SecureFiles | None = None) -> str:
    controller = f"{HOST}:{state.controller_port}"
    listeners = f"PLAINTEXT://{HOST}:{state.broker_port},CONTROLLER://{controller}"
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.bootstrap.servers": controller,
        "listeners": listeners,
        "advertised.listeners": listeners,
        "inter.broker.listener.name": "PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(log_dir),
        "num.partitions": "1",
        "auto.create.topics.enable": "false",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
    }
    if secure is not None and state.ssl_port is not None:
        ports = {"SASL_SSL": state.broker_port, "SSL": state.ssl_port, "CONTROLLER": state.controller_port}
        props.update(secure_properties(secure, secure.users(), HOST, ports))
    return "".join(f"{key}={value}\n" for key, value in props.items())


class LocalBroker:
    """One KRaft broker in ``data_dir``; ``start()`` formats on first use and reuses ports on restart."""

    def __init__(
        self,
        data_dir: Path | str,
        libs: Path | None = None,
        *,
        java: str | None = None,
        startup_timeout: float = 60.0,
        stop_timeout: float = 30.0,
        secure: bool = False,
        users: dict[str, str | None] | None = None,
    ) -> None:
        """``secure``: SASL_SSL, mutual TLS and ACLs (see localbroker/secure.py), with ``users`` (name -> password,
        None for a random one) besides ``admin``; both take effect when the data dir is first formatted."""
        self.data_dir = Path(data_dir).expanduser().resolve()
        self._secure = secure
        self._wanted_users = dict(users or {})
        self._libs = libs
        self._java = java
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self.state: BrokerState | None = None
        self.start_seconds: float | None = None
        self.stop_seconds: float | None = None

    @property
    def server_properties(self) -> Path:
        return self.data_dir / "server.properties"

    @property
    def log4j_properties(self) -> Path:
        return self.data_dir / "log4j2.properties"

    @property
    def log_file(self) -> Path:
        return self.data_dir / LOG_FILE

    @property
    def pid_file(self) -> Path:
        return self.data_dir / PID_FILE

    @property
    def tls(self) -> SecureFiles:
        """The CA, certificates and users of a secured broker."""
        return SecureFiles(self.data_dir / "tls")

    @property
    def tls_bootstrap(self) -> str:
        """The mutual-TLS listener of a secured broker."""
        state = self.state or self.load_state()
        if state is None or state.ssl_port is None:
            raise BrokerError(f"{self.data_dir} holds no secured broker")
        return f"{HOST}:{state.ssl_port}"

    def admin_options(self) -> dict[str, Any]:
        """aiokafka security arguments of the super user (empty for a plaintext broker)."""
        state = self.state or self.load_state()
        return self.tls.admin_options() if state is not None and state.secure else {}

    @property
    def bootstrap(self) -> str:
        """``127.0.0.1:<port>`` (SASL_SSL when secured); available once the data dir has been prepared."""
        state = self.state or self.load_state()
        if state is None:
            raise BrokerError(f"{self.data_dir} holds no broker state yet: start() it first")
        return state.bootstrap

    def load_state(self) -> BrokerState | None:
        """The ports and cluster id recorded at first start, or None for a fresh data dir."""
        path = self.data_dir / STATE_FILE
        if not path.is_file():
            return None
        raw = json.loads(path.read_text())
        ssl_port = raw.get("ssl_port")
        return BrokerState(
            int(raw["broker_port"]),
            int(raw["controller_port"]),
            str(raw["cluster_id"]),
            None if ssl_port is None else int(ssl_port),
        )

    def _java_command(self, *jvm_flags: str) -> list[str]:
        java = self._java or (
            str(Path(os.environ["JAVA_HOME"]) / "bin" / "java") if os.environ.get("JAVA_HOME") else shutil.which("java")
        )
        if not java:
            raise BrokerError("no `java` found (JAVA_HOME or PATH): the broker needs Java 17+")
        libs = self._libs or ensure_kafka_libs()
        # "<libs>/*" is expanded by the JVM, not a shell.
        return [java, *jvm_flags, f"-Dlog4j2.configurationFile={self.log4j_properties}", "-cp", f"{libs}/*"]

    def _prepare(self) -> BrokerState:
        """Write configs and format the log dir once; later calls reuse the recorded ports and cluster id."""
        log_dir = self.data_dir / KAFKA_LOG_DIR
        log_dir.mkdir(parents=True, exist_ok=True)
        state = self.load_state()
        formatted = (log_dir / "meta.properties").is_file()
        if state is None:
            if formatted:
                raise BrokerError(f"{log_dir} is formatted but {STATE_FILE} is missing: use a fresh data dir")
            broker_port, controller_port, ssl_port = free_ports(3)  # before formatting: --standalone records them
            state = BrokerState(broker_port, controller_port, new_cluster_id(), ssl_port if self._secure else None)
            (self.data_dir / STATE_FILE).write_text(json.dumps(state.__dict__, indent=2) + "\n")
        secure = self.tls if state.secure else None
        users = secure.prepare(self._wanted_users) if secure is not None else {}
        if self._secure and not state.secure:
            raise BrokerError(f"{self.data_dir} holds a plaintext broker: use another data dir for a secured one")
        self.server_properties.write_text(_server_properties(state, log_dir, secure))
        self.server_properties.chmod(0o600)  # a secured broker's holds the admin password
        self.log4j_properties.write_text(LOG4J2_PROPERTIES)
        if not formatted:
            command = [
                *self._java_command("-Xmx256m"),
                "kafka.tools.StorageTool",
                "format",
                "--standalone",
                f"--cluster-id={state.cluster_id}",
                "-c",
                str(self.server_properties),
                *scram_arguments(users),
            ]
            done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=180)
            if done.returncode != 0:
                raise BrokerError(f"StorageTool format failed (exit {done.returncode}):\n{done.stdout}{done.stderr}")
        self.state = state
        return state

    def running_pid(self) -> int | None:
        """Pid of this data dir's broker if one is running (started by us or by an earlier process)."""
        if self._proc is not None:
            return self._proc.pid if self._proc.poll() is None else None
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        return pid if process_alive(pid) and owns_pid(pid, self.server_properties) else None

    def start(self) -> str:
        """Start the broker (or adopt the one already running on this data dir); return the bootstrap address."""
        if self.running_pid() is not None:
            self.state = self.load_state()
            return self.bootstrap
        state = self._prepare()
        for port in (state.broker_port, state.controller_port, *([state.ssl_port] if state.ssl_port else [])):
            if not port_is_free(port):
                raise BrokerError(f"port {port} recorded in {self.data_dir / STATE_FILE} is in use by another process")
        command = [*self._java_command(*JVM_FLAGS), "kafka.Kafka", str(self.server_properties)]
        started = time.monotonic()
        with self.log_file.open("ab") as log:
            self._proc = subprocess.Popen(
                command,
                cwd=self.data_dir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # own process group: stop() signals the JVM, never our test run
            )
        self.pid_file.write_text(f"{self._proc.pid}\n")
        proc = self._proc
        try:
            run_sync(
                wait_until_ready(
                    state.bootstrap,
                    self.startup_timeout,
                    alive=lambda: proc.poll() is None,
                    describe=lambda: f"--- tail of {self.log_file} ---\n{log_tail(self.log_file)}",
                    options=self.admin_options(),
                )
            )
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - started
        return state.bootstrap

    def stop(self) -> int | None:
        """SIGTERM the broker's process group, SIGKILL after ``stop_timeout``; return the exit code if known."""
        pid = self.running_pid()
        proc, self._proc = self._proc, None
        if pid is None:
            if proc is not None:
                proc.wait()  # already exited: reap it
            self.pid_file.unlink(missing_ok=True)
            return None if proc is None else proc.returncode
        started = time.monotonic()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
        if not self._wait_gone(pid, proc, self.stop_timeout):
            _log.warning("broker pid %s ignored SIGTERM for %.0f s: sending SIGKILL", pid, self.stop_timeout)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            self._wait_gone(pid, proc, 10.0)
        self.stop_seconds = time.monotonic() - started
        self.pid_file.unlink(missing_ok=True)
        return None if proc is None else proc.returncode

    @staticmethod
    def _wait_gone(pid: int, proc: subprocess.Popen[bytes] | None, timeout: float) -> bool:
        if proc is not None:
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                return False
            return True
        deadline = time.monotonic() + timeout
        while process_alive(pid):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)
        return True

    def detach(self) -> None:
        """Leave the broker running after this object goes away (CLI `start`); `stop` later uses the pid file."""
        if self._proc is not None:
            # Popen warns when collected while its child runs; the pid file now owns the process.
            self._proc.returncode = 0
            self._proc = None

    async def astart(self) -> str:
        """``start()`` without blocking the caller's event loop."""
        return await asyncio.to_thread(self.start)

    async def astop(self) -> int | None:
        """``stop()`` without blocking the caller's event loop."""
        return await asyncio.to_thread(self.stop)

    def __enter__(self) -> LocalBroker:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def broker_status(data_dir: Path | str) -> dict[str, Any]:
    """Whether a broker runs on ``data_dir``, with its pid, bootstrap address and log path."""
    broker = LocalBroker(data_dir)
    pid = broker.running_pid()
    state = broker.load_state()
    return {
        "running": pid is not None,
        "pid": pid,
        "bootstrap": state.bootstrap if state else None,
        "secure": bool(state and state.secure),
        "data_dir": str(broker.data_dir),
        "log": str(broker.log_file),
    }
