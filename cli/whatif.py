"""`placement-stream what-if -f FILE --url URL`: what a Placement, PlacementRule or pod would get on the fleet as
it is now, asked of any running replica (it forwards to the subject's owner); nothing is published."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from urllib.parse import quote

import orjson

from cli.explain import _error_of
from streams.errors import ServiceError
from streams.http import http_call
from streams.settings import load_settings

__all__ = ["add_arguments", "main_from_args"]

_TIMEOUT_SECONDS = 30.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's options."""
    parser.add_argument("-f", "--filename", required=True, help="one YAML or JSON document (- for stdin)")
    parser.add_argument("--url", required=True, help="any running processor's HTTP address, e.g. http://host:8080")
    parser.add_argument(
        "-n", "--namespace", default="default", help="for a document that names none (default: default)"
    )


def main_from_args(args: argparse.Namespace) -> int:
    """POST the document to /what-if and print the answer; 1 with the server's reason when it refuses."""
    try:
        body = sys.stdin.buffer.read() if args.filename == "-" else Path(args.filename).read_bytes()
    except OSError as exc:
        raise ServiceError(f"{args.filename}: {exc.strerror}") from exc
    bearer = load_settings().explain_bearer()  # the /explain token guards /what-if too
    url = f"{args.url.rstrip('/')}/what-if?namespace={quote(args.namespace, safe='')}"
    try:
        status, answer = http_call(url, _TIMEOUT_SECONDS, bearer, body, "application/yaml")
    except OSError as exc:
        raise ServiceError(f"{args.url}: {getattr(exc, 'reason', exc)}") from exc
    if status != 200:
        raise ServiceError(f"{args.url}: HTTP {status}{_error_of(answer)}")
    sys.stdout.buffer.write(orjson.dumps(orjson.loads(answer), option=orjson.OPT_INDENT_2) + b"\n")
    return 0
