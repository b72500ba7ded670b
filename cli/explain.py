"""`placement-stream explain`: how one subject was decided, after replaying a file or asked of a running
processor over HTTP (the instance that owns the subject answers; another answers 404)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson

from streams.errors import ServiceError

__all__ = ["add_arguments", "explain"]


def add_arguments(explain: argparse.ArgumentParser) -> None:
    """The command's options: a replay input or `--url`, and the subject."""
    source = explain.add_mutually_exclusive_group(required=True)
    source.add_argument("file", nargs="?", help="a replay input (JSONL, or - for stdin)")
    source.add_argument("--url", help="a running processor's HTTP address, e.g. http://localhost:8080")
    explain.add_argument(
        "--placement",
        "--subject",
        dest="placement",
        required=True,
        metavar="KEY",
        help="NS/NAME of a placement, or a subject key (Placement/NS/NAME, PlacementRule/NS/NAME, Application/P)",
    )
    explain.add_argument("--queue-config", type=Path)


def explain(args: argparse.Namespace) -> int:
    """Print the subject's explanation as JSON; exit 1 when the source does not know it, 2 for a bad key."""
    from engine.errors import RoutingError
    from engine.runtime.routing import explain_key

    try:
        key = explain_key(args.placement)
    except RoutingError as exc:  # a usage error, like argparse's own
        print(f"placement-stream explain: {exc}", file=sys.stderr)
        return 2
    report = _explain_remote(args.url, key) if args.url else _explain_replayed(args, key)
    if report is None:
        where = args.url or args.file
        print(f"{key} is not known to {where}", file=sys.stderr)
        return 1
    sys.stdout.buffer.write(orjson.dumps(report, option=orjson.OPT_INDENT_2) + b"\n")
    return 0


def _explain_replayed(args: argparse.Namespace, key: str) -> dict[str, Any] | None:
    from streams.cli import input_lines
    from streams.replay import Replayer
    from streams.settings import load_settings

    with open(os.devnull, "wb") as discard, input_lines(args.file) as lines:  # only the state afterwards matters
        replayer = Replayer(load_settings(explain=[key]), discard, queue_config=args.queue_config)
        replayer.run(lines)
    return replayer.runtime.explain(key, replayer.now)


def _explain_remote(url: str, key: str) -> dict[str, Any] | None:
    """Any instance answers: the owner of the subject, or another forwarding to it (platform P17)."""
    from streams.http import http_get
    from streams.settings import load_settings

    bearer = load_settings().explain_bearer()  # PLACEMENT_EXPLAIN_TOKEN(_FILE), as the processor reads it
    try:
        status, body = http_get(f"{url.rstrip('/')}/explain/{quote(key, safe='')}", timeout=10, bearer=bearer)
    except OSError as exc:
        raise ServiceError(f"{url}: {getattr(exc, 'reason', exc)}") from exc
    if status == 404:
        return None
    if status != 200:
        raise ServiceError(f"{url}: HTTP {status}{_error_of(body)}")
    loaded: dict[str, Any] = orjson.loads(body)
    return loaded


def _error_of(body: bytes) -> str:
    """`: <message>` from a JSON error body, so the server's reason reaches the user; empty otherwise."""
    try:
        message = orjson.loads(body).get("error")
    except (orjson.JSONDecodeError, AttributeError):
        return ""
    return f": {message}" if isinstance(message, str) else ""
