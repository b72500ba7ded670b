"""Command line for the local broker: ``fetch | start | stop | status``.

``start`` leaves the broker running in the background (its own process group, a pid file in the data dir) and
prints the bootstrap address on stdout, so shells can do ``BOOTSTRAP=$(python -m localbroker start ...)``.
Progress and timings go to stderr. ``stop`` and ``status`` without ``--data-dir`` find the broker that ``start``
or the demo (``placement-stream demo``) left running.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from localbroker.broker import BrokerError, LocalBroker, broker_status
from localbroker.commands import add_commands, default_data_dir, known_data_dirs
from localbroker.fetch import KafkaLibsError, ensure_kafka_libs
from localbroker.secure import TlsError, write_client_settings

__all__ = ["main", "run_command"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="localbroker", description="Local Apache Kafka broker without Docker.")
    add_commands(parser)
    return parser


def _find_running(data_dir: Path | None) -> Path:
    """The named data dir, else the first known one whose broker runs, else the default one."""
    if data_dir is not None:
        return data_dir
    for candidate in known_data_dirs():
        if LocalBroker(candidate).running_pid() is not None:
            return candidate
    return default_data_dir()


def main(argv: list[str] | None = None) -> int:
    """Run one command; return the process exit code (errors print one message, not a traceback)."""
    return run_command(_parser().parse_args(argv))


def run_command(args: argparse.Namespace) -> int:
    """Run the command `add_commands` parsed."""
    try:
        if args.broker_command == "fetch":
            print(ensure_kafka_libs(args.cache_dir, args.kafka_version))
            return 0
        if args.broker_command == "start":
            return _start(args)
        data_dir = _find_running(args.data_dir)
        if args.broker_command == "stop":
            broker = LocalBroker(data_dir, stop_timeout=args.timeout)
            if broker.running_pid() is None:
                print(f"localbroker: no broker running on {broker.data_dir}", file=sys.stderr)
                return 0
            broker.stop()
            print(f"localbroker: stopped {broker.data_dir} in {broker.stop_seconds:.1f} s", file=sys.stderr)
            return 0
        status = broker_status(data_dir)
        if args.json:
            print(json.dumps(status))
        elif status["running"]:
            secure = " secure" if status["secure"] else ""
            print(f"running{secure} pid={status['pid']} bootstrap={status['bootstrap']} log={status['log']}")
        else:
            print(f"stopped data_dir={status['data_dir']}")
        return 0 if status["running"] else 1
    except (BrokerError, KafkaLibsError, TlsError) as exc:
        print(f"localbroker: {exc}", file=sys.stderr)
        return 2


def _start(args: argparse.Namespace) -> int:
    if args.user and not args.secure:
        print("localbroker: --user needs --secure", file=sys.stderr)
        return 2
    libs = ensure_kafka_libs(version=args.kafka_version)
    data_dir: Path = args.data_dir or default_data_dir()
    users: dict[str, str | None] = dict.fromkeys(args.user)
    broker = LocalBroker(data_dir, libs, startup_timeout=args.timeout, secure=args.secure, users=users)
    already = broker.running_pid()
    bootstrap = broker.start()
    broker.detach()
    if already is not None:
        print(f"localbroker: already running (pid {already})", file=sys.stderr)
    else:
        print(f"localbroker: ready in {broker.start_seconds:.1f} s, log {broker.log_file}", file=sys.stderr)
    if broker.state is not None and broker.state.secure:
        written = write_client_settings(broker.tls, bootstrap)
        print(
            f"localbroker: secured; client settings (no secrets inline) in {', '.join(str(p) for p in written)}; "
            f"mutual TLS on {broker.tls_bootstrap}",
            file=sys.stderr,
        )
    print(bootstrap)
    return 0
