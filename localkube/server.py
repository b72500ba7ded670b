"""A Kubernetes API server on loopback: kine (the etcd API over SQLite) and apiextensions-apiserver.

apiextensions-apiserver is the generic API server that serves CustomResourceDefinitions and their objects, all
OCM needs. Run outside a cluster it expects another API server for delegated authentication, authorization and
its informers; here every one of those kubeconfigs points at itself. Clients authenticate with a client
certificate in the `system:masters` group, which the delegating authorizer allows without asking anyone; the
admission plugins that would wait on informers of kinds this server does not serve (namespaces, webhook
configurations) and priority-and-fairness are off. Everything lives in one data dir: certificates, the
kubeconfig, the SQLite file, the logs and `state.json` (ports and process ids, for `stop` from another shell).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from types import TracebackType

from localbroker.procs import free_ports, log_tail, process_alive
from localbroker.secure import issue_certificate, make_ca
from localkube.build import APISERVER, KINE, ensure_binary
from localkube.crds import SERVED_AT_START, ensure_crds, install_crds, load_crds
from localkube.errors import KubeServerError

__all__ = ["KubeState", "LocalKube"]

HOST = "127.0.0.1"
ADMIN_GROUP = "system:masters"
_OFF_ADMISSION = "NamespaceLifecycle,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ValidatingAdmissionPolicy"


@dataclass(frozen=True)
class KubeState:
    """Ports and process ids of one running server."""

    api_port: int
    etcd_port: int
    kine_pid: int
    apiserver_pid: int

    @property
    def server(self) -> str:
        return f"https://{HOST}:{self.api_port}"


_RESTART_ATTEMPTS = 5
"""Starts of a crashed API server before `crash_apiserver` gives up."""


class LocalKube:
    """One API server with OCM's CRDs; `start()` returns the admin kubeconfig's path."""

    def __init__(self, data_dir: Path, startup_timeout: float = 120.0) -> None:
        self.data_dir = data_dir.resolve()
        self.startup_timeout = startup_timeout
        self.start_seconds = 0.0
        self._procs: list[subprocess.Popen[bytes]] = []

    @property
    def kubeconfig(self) -> Path:
        return self.data_dir / "kubeconfig"

    @property
    def pki(self) -> Path:
        return self.data_dir / "pki"

    def state(self) -> KubeState | None:
        try:
            return KubeState(**json.loads((self.data_dir / "state.json").read_text()))
        except (OSError, ValueError, TypeError):
            return None

    def running(self) -> bool:
        found = self.state()
        return found is not None and process_alive(found.apiserver_pid)

    def _certificates(self) -> None:
        ca = make_ca(self.pki)
        issue_certificate(ca, self.pki, "localkube")
        issue_certificate(ca, self.pki, "admin", organization=ADMIN_GROUP)

    def _write_kubeconfig(self, server: str) -> None:
        pki = self.pki
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": "localkube", "cluster": {"server": server, "certificate-authority": f"{pki}/ca.pem"}}
            ],
            "users": [
                {"name": "admin", "user": {"client-certificate": f"{pki}/admin.pem", "client-key": f"{pki}/admin.key"}}
            ],
            "contexts": [{"name": "localkube", "context": {"cluster": "localkube", "user": "admin"}}],
            "current-context": "localkube",
        }
        self.kubeconfig.write_text(json.dumps(config, indent=2))

    def _spawn(self, command: list[str], log_name: str) -> subprocess.Popen[bytes]:
        with (self.data_dir / log_name).open("ab") as log:
            proc = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        self._procs.append(proc)
        return proc

    def _apiserver_command(self, binary: Path, api_port: int, etcd_port: int) -> list[str]:
        pki, config = self.pki, str(self.kubeconfig)
        return [
            str(binary),
            f"--etcd-servers=http://{HOST}:{etcd_port}",
            f"--bind-address={HOST}",
            f"--secure-port={api_port}",
            f"--tls-cert-file={pki}/localkube.pem",
            f"--tls-private-key-file={pki}/localkube.key",
            f"--client-ca-file={pki}/ca.pem",
            f"--cert-dir={pki}",
            f"--kubeconfig={config}",
            f"--authentication-kubeconfig={config}",
            f"--authorization-kubeconfig={config}",
            "--authentication-skip-lookup",
            f"--disable-admission-plugins={_OFF_ADMISSION}",
            "--enable-priority-and-fairness=false",
            "--etcd-db-metric-poll-interval=0",  # kine has no database size to report
        ]

    def start(self) -> Path:
        """Build or reuse the binaries, start both processes, install the CRDs (`SERVED_AT_START`); the kubeconfig's
        path."""
        if self.running():
            return self.kubeconfig
        kine, apiserver = ensure_binary(KINE), ensure_binary(APISERVER)
        crds = [path for source in SERVED_AT_START for path in ensure_crds(source)]
        started = time.monotonic()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if not (self.pki / "admin.pem").is_file():
            self._certificates()
        api_port, etcd_port = free_ports(2)
        self._write_kubeconfig(f"https://{HOST}:{api_port}")
        store = self.data_dir / "kine.db"
        kine_proc = self._spawn(
            [
                str(kine),
                f"--endpoint=sqlite://{store}?_journal=WAL&cache=shared&_busy_timeout=30000",
                f"--listen-address={HOST}:{etcd_port}",
                "--metrics-bind-address=0",  # no metrics server: its default port is the processor's
            ],
            "kine.log",
        )
        api_proc = self._spawn(self._apiserver_command(apiserver, api_port, etcd_port), "apiserver.log")
        state = KubeState(api_port, etcd_port, kine_proc.pid, api_proc.pid)
        (self.data_dir / "state.json").write_text(json.dumps(asdict(state)))
        try:
            self._wait_ready(state)
            install_crds(self.kubeconfig, load_crds(crds))
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - started
        return self.kubeconfig

    def _ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.pki / "ca.pem"))
        context.load_cert_chain(self.pki / "admin.pem", self.pki / "admin.key")
        return context

    def _describe(self) -> str:
        return "\n".join(f"--- {name}\n{log_tail(self.data_dir / name)}" for name in ("kine.log", "apiserver.log"))

    def _wait_ready(self, state: KubeState) -> None:
        """Until the server serves the CRD API: /healthz passes before the CRD handler is installed."""
        context = self._ssl_context()
        deadline = time.monotonic() + self.startup_timeout
        url = f"{state.server}/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        while time.monotonic() < deadline:
            if not (process_alive(state.kine_pid) and process_alive(state.apiserver_pid)):
                raise KubeServerError(f"the API server or kine exited during start-up\n{self._describe()}")
            if self._get(url, context) is not None:
                return
            time.sleep(0.2)
        raise KubeServerError(
            f"API server at {state.server} not ready after {self.startup_timeout:g} s\n{self._describe()}"
        )

    def _get(self, url: str, context: ssl.SSLContext) -> bytes | None:
        """The body of a 200 answer; None for any other answer or no answer."""
        with (
            contextlib.suppress(OSError, urllib.error.URLError),
            urllib.request.urlopen(url, context=context, timeout=5) as answer,
        ):
            return bytes(answer.read()) if answer.status == 200 else None
        return None

    def _wait_served(self, state: KubeState) -> None:
        """Until every installed CRD's objects are served: a restarted server lists its CRDs before it serves their
        objects, and answers 404 (or 429) for them meanwhile."""
        context = self._ssl_context()
        deadline = time.monotonic() + self.startup_timeout
        body = self._get(f"{state.server}/apis/apiextensions.k8s.io/v1/customresourcedefinitions", context)
        crds = json.loads(body or b"{}").get("items", [])
        paths = [
            f"/apis/{crd['spec']['group']}/{version['name']}/{crd['spec']['names']['plural']}?limit=1"
            for crd in crds
            for version in crd["spec"]["versions"]
            if version.get("served")
        ]
        for path in paths:
            while self._get(f"{state.server}{path}", context) is None:
                if time.monotonic() > deadline:
                    raise KubeServerError(f"API server at {state.server} does not serve {path}\n{self._describe()}")
                time.sleep(0.1)

    def _end(self, pid: int, timeout: float) -> None:
        """SIGTERM the process group, SIGKILL it if still there after `timeout`."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while process_alive(pid) and time.monotonic() < deadline:
            for proc in self._procs:
                if proc.pid == pid:
                    proc.poll()
            time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)

    def crash_apiserver(self) -> None:
        """Kill the API server alone (SIGKILL) and start it again on the same port and storage, as a crash of a
        real one would: every watch and connection breaks, every object stays."""
        state = self.state()
        if state is None:
            raise KubeServerError(f"no API server runs in {self.data_dir}")
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(state.apiserver_pid, signal.SIGKILL)
        self._end(state.apiserver_pid, timeout=10)
        command = self._apiserver_command(ensure_binary(APISERVER), state.api_port, state.etcd_port)
        for attempt in range(_RESTART_ATTEMPTS):
            state = replace(state, apiserver_pid=self._spawn(command, "apiserver.log").pid)
            (self.data_dir / "state.json").write_text(json.dumps(asdict(state)))
            try:
                self._wait_ready(state)
                self._wait_served(state)
                return
            except KubeServerError:
                # the port can stay taken for a moment after the kill (seen under load: "address already in
                # use"); a real server's supervisor restarts it the same way
                if attempt + 1 == _RESTART_ATTEMPTS or not process_alive(state.kine_pid):
                    raise
                time.sleep(1.0)

    def stop(self, timeout: float = 20.0) -> None:
        """Stop both processes, the API server first."""
        state = self.state()
        pids = [state.apiserver_pid, state.kine_pid] if state is not None else [p.pid for p in self._procs]
        for pid in pids:
            self._end(pid, timeout)
        for proc in self._procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout)
        self._procs.clear()
        (self.data_dir / "state.json").unlink(missing_ok=True)

    def __enter__(self) -> LocalKube:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()
