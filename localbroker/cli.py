"""Command line for the local broker: ``fetch | start | stop | status``.

``start`` leaves the broker running in the background (its own process group, a pid file in the data dir) and
prints the bootstrap address on stdout, so shells can do ``BOOTSTRAP=$(python -m localbroker start ...)``.
Progress and timings go to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from localbroker.broker import BrokerError, LocalBroker, broker_status
from localbroker.fetch import KafkaLibsError, default_cache_root, ensure_kafka_libs

__all__ = ["main"]


def _default_data_dir() -> Path:
    return default_cache_root() / "broker"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="localbroker", description="Local Apache Kafka broker without Docker.")
    commands = parser.add_subparsers(dest="command", required=True)

    fetch = commands.add_parser("fetch", help="download the broker classpath into the cache (once)")
    fetch.add_argument("--cache-dir", type=Path, default=None, help="default: $PLACEMENT_CACHE_DIR or .cache")
    fetch.add_argument("--kafka-version", default=None, help="Kafka version (default: $KAFKA_VERSION or 4.4.0)")

    for name, text in (
        ("start", "start a broker in the background and print its bootstrap address"),
        ("stop", "stop the broker of a data dir"),
        ("status", "report whether the broker of a data dir runs (exit 0) or not (exit 1)"),
    ):
        sub = commands.add_parser(name, help=text)
        sub.add_argument("--data-dir", type=Path, default=None, help="broker data dir (default: <cache>/broker)")
        if name == "start":
            sub.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for readiness")
            sub.add_argument("--kafka-version", default=None, help="Kafka version (default: $KAFKA_VERSION or 4.4.0)")
        if name == "stop":
            sub.add_argument("--timeout", type=float, default=30.0, help="seconds before SIGKILL")
        if name == "status":
            sub.add_argument("--json", action="store_true", help="print the status as JSON")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; return the process exit code (errors print one message, not a traceback)."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "fetch":
            print(ensure_kafka_libs(args.cache_dir, args.kafka_version))
            return 0
        data_dir: Path = args.data_dir or _default_data_dir()
        if args.command == "start":
            libs = ensure_kafka_libs(version=args.kafka_version)
            broker = LocalBroker(data_dir, libs, startup_timeout=args.timeout)
            already = broker.running_pid()
            bootstrap = broker.start()
            broker.detach()
            if already is not None:
                print(f"localbroker: already running (pid {already})", file=sys.stderr)
            else:
                print(f"localbroker: ready in {broker.start_seconds:.1f} s, log {broker.log_file}", file=sys.stderr)
            print(bootstrap)
            return 0
        if args.command == "stop":
            broker = LocalBroker(data_dir, stop_timeout=args.timeout)
            if broker.running_pid() is None:
                print(f"localbroker: no broker running on {broker.data_dir}", file=sys.stderr)
                return 0
            broker.stop()
            print(f"localbroker: stopped in {broker.stop_seconds:.1f} s", file=sys.stderr)
            return 0
        status = broker_status(data_dir)
        if args.json:
            print(json.dumps(status))
        elif status["running"]:
            print(f"running pid={status['pid']} bootstrap={status['bootstrap']} log={status['log']}")
        else:
            print(f"stopped data_dir={status['data_dir']}")
        return 0 if status["running"] else 1
    except (BrokerError, KafkaLibsError) as exc:
        print(f"localbroker: {exc}", file=sys.stderr)
        return 2
