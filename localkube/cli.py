"""Command line of the local API server: ``fetch | start | stop``.

``fetch`` builds the binaries and fetches the CRDs into the cache (what a clean clone's test run does first);
``start`` leaves the server running and prints its kubeconfig's path on stdout; ``stop`` stops it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from localkube.build import COMPONENTS, ensure_binary, kube_cache
from localkube.crds import PROMETHEUS_OPERATOR, SERVED_AT_START, ensure_crds
from localkube.errors import LocalKubeError
from localkube.server import LocalKube

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="localkube", description="Local Kubernetes API server with OCM's CRDs.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("fetch", help="build the API server and kine, fetch the CRDs (cached)")
    for name in ("start", "stop"):
        sub = commands.add_parser(name, help=f"{name} a server in --data-dir")
        sub.add_argument("--data-dir", type=Path, default=kube_cache() / "run", help="(default: <cache>/kube/run)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; errors print one message, not a traceback."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "fetch":
            started = time.monotonic()
            for component in COMPONENTS:
                print(ensure_binary(component))
            for source in (*SERVED_AT_START, PROMETHEUS_OPERATOR):
                print(ensure_crds(source)[0].parent)
            print(f"localkube: ready in {time.monotonic() - started:.1f} s", file=sys.stderr)
            return 0
        server = LocalKube(args.data_dir)
        if args.command == "start":
            kubeconfig = server.start()
            print(f"localkube: ready in {server.start_seconds:.1f} s, logs in {server.data_dir}", file=sys.stderr)
            print(kubeconfig)
            return 0
        server.stop()
        return 0
    except LocalKubeError as exc:
        print(f"localkube: {exc}", file=sys.stderr)
        return 2
