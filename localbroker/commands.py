"""The local broker's subcommands and their help, built without importing the broker code, so the parsers of
``python -m localbroker`` and ``placement-stream broker`` stay fast to build; localbroker/cli.py runs them."""

from __future__ import annotations

import argparse
from pathlib import Path

from localbroker.fetch import default_cache_root

__all__ = ["DEMO_DIR_NAME", "add_commands", "default_data_dir", "known_data_dirs"]

DEMO_DIR_NAME = "demo-broker"
"""The demo's broker data dir inside the cache (see cli/demo.py)."""

_EPILOG = """\
The broker is a single-node KRaft Apache Kafka run from the Maven-resolved classpath in the cache
($PLACEMENT_CACHE_DIR or <repo>/.cache); Java 17+ is needed, Docker is not.
"""


def default_data_dir() -> Path:
    """Where `start` keeps its broker unless told otherwise."""
    return default_cache_root() / "broker"


def known_data_dirs() -> list[Path]:
    """Where `start` and the demo keep their brokers, in that order."""
    return [default_data_dir(), default_cache_root() / DEMO_DIR_NAME]


def add_commands(parser: argparse.ArgumentParser) -> None:
    """Add the fetch/start/stop/status subcommands (with their help) to `parser`."""
    commands = parser.add_subparsers(dest="broker_command", required=True, metavar="{fetch,start,stop,status}")
    data_dir_help = "broker data dir (default: <cache>/broker; stop/status also look at the demo's <cache>/demo-broker)"

    fetch = commands.add_parser(
        "fetch",
        help="download the broker classpath into the cache (once)",
        description="Resolve the Kafka broker's jars from Maven Central into the cache; later runs reuse them.",
        epilog=_EPILOG,
    )
    fetch.add_argument("--cache-dir", type=Path, default=None, help="default: $PLACEMENT_CACHE_DIR or .cache")
    fetch.add_argument("--kafka-version", default=None, help="Kafka version (default: $KAFKA_VERSION or 4.4.0)")

    start = commands.add_parser(
        "start",
        help="start a broker in the background and print its bootstrap address",
        description="Start (or find running) a broker in the data dir and print its bootstrap address on stdout. "
        "With --secure: a SASL_SSL listener (SCRAM-SHA-256/512, PLAIN, unsigned OAUTHBEARER), a mutual-TLS "
        "listener, a generated CA and broker certificate, and ACLs enforced by StandardAuthorizer with the super "
        "user `admin`; each user's client settings are written to <data dir>/tls/<user>.env.",
        epilog=_EPILOG,
    )
    start.add_argument("--data-dir", type=Path, default=None, help="broker data dir (default: <cache>/broker)")
    start.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for readiness (default: 60)")
    start.add_argument("--kafka-version", default=None, help="Kafka version (default: $KAFKA_VERSION or 4.4.0)")
    start.add_argument("--secure", action="store_true", help="TLS, SCRAM users and ACLs (a fresh data dir only)")
    start.add_argument(
        "--user",
        action="append",
        default=[],
        metavar="NAME",
        help="with --secure: a SCRAM user besides `admin` (random password), repeatable",
    )

    stop = commands.add_parser(
        "stop",
        help="stop the broker of a data dir",
        description="Stop the broker (SIGTERM, then SIGKILL after --timeout).",
        epilog=_EPILOG,
    )
    stop.add_argument("--data-dir", type=Path, default=None, help=data_dir_help)
    stop.add_argument("--timeout", type=float, default=30.0, help="seconds before SIGKILL (default: 30)")

    status = commands.add_parser(
        "status",
        help="report whether the broker of a data dir runs (exit 0) or not (exit 1)",
        description="Print whether a broker runs, its pid, bootstrap address and log; exit 0 if it runs.",
        epilog=_EPILOG,
    )
    status.add_argument("--data-dir", type=Path, default=None, help=data_dir_help)
    status.add_argument("--json", action="store_true", help="print the status as JSON")
