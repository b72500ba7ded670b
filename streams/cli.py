"""`placement-stream` command line: run, replay, explain, schemas, check-config, broker, manifests, watch,
repartition, what-if, describe, demo."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from localbroker.commands import add_commands as add_broker_commands
from streams.errors import ServiceError
from streams.version import VERSION

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="placement-stream", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {VERSION}")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run the processor against Kafka (settings from PLACEMENT_* env and .env)")
    run.add_argument("--bootstrap-servers", help="overrides PLACEMENT_KAFKA__BOOTSTRAP_SERVERS")
    run.add_argument("--queue-config", type=Path, help="overrides PLACEMENT_QUEUE_CONFIG")
    run.add_argument("--http-port", type=int, help="overrides PLACEMENT_HTTP_PORT (0 disables)")

    replay = sub.add_parser("replay", help="run the processor over a JSONL file (or - for stdin) in memory")
    replay.add_argument("file", help="JSONL input, or - to read stdin incrementally")
    replay.add_argument("--queue-config", type=Path, help="YuniKorn queue configuration file (re-read on change)")
    replay.add_argument(
        "--explain", action="append", default=[], metavar="NS/NAME", help="placements with explain data"
    )
    replay.add_argument("--advisor-timeout", type=float, help="seconds an advisor round waits (default 30)")
    replay.add_argument(
        "--all",
        action="store_true",
        help="print every record, changelog included (default: decisions, advisor requests and dead letters)",
    )
    replay.add_argument(
        "--keep-going", action="store_true", help="exit 0 even when lines were dead-lettered or could not be replayed"
    )

    explain = sub.add_parser(
        "explain", help="how one subject was decided: after replaying FILE, or from a running processor (--url)"
    )
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

    schemas = sub.add_parser(
        "schemas", help="write the JSON Schema of every event type: the CloudEvents envelope with its data"
    )
    schemas.add_argument("--out", type=Path, help="folder for one <type>.schema.json per event (default: stdout)")

    check = sub.add_parser(
        "check-config", help="validate a YuniKorn queue configuration file, or its ConfigMap, without running"
    )
    check.add_argument("file", type=Path)

    broker = sub.add_parser(
        "broker",
        help="local Apache Kafka for development: fetch | start | stop | status",
        description="A local single-node Apache Kafka broker without Docker (plaintext, or --secure).",
    )
    add_broker_commands(broker)

    from streams.apply.arguments import add_arguments as add_apply_arguments

    for verb, text in (
        ("apply", "publish Kubernetes YAML/JSON documents as the contract's events (like kubectl apply -f)"),
        ("delete", "publish the deletion of the objects the documents name (like kubectl delete -f)"),
    ):
        add_apply_arguments(sub.add_parser(verb, help=text, description=text), delete=verb == "delete")

    from streams.manifests.arguments import add_arguments as add_manifests_arguments

    add_manifests_arguments(
        sub.add_parser("manifests", help="Kubernetes resources for the service: strimzi (KafkaTopic, KafkaUser)")
    )

    from streams.watch.command import add_arguments as add_watch_arguments

    text = "publish a Kubernetes API server's OCM objects as apply -f would, continuously (list, then watch)"
    add_watch_arguments(sub.add_parser("watch", help=text, description=text))

    repartition = sub.add_parser(
        "repartition",
        help="copy the state into new co-partitioned topics with another partition count (docs/operations.md)",
        description="With every processor stopped and every submission processed: create the co-partitioned "
        "topics again under new names (the old ones plus --suffix) with --partitions partitions, and copy each "
        "subject's latest state and decision into its new partition. Prints the settings that run on them.",
    )
    repartition.add_argument("--partitions", type=int, required=True, help="the new partition count")
    repartition.add_argument("--suffix", help="appended to each co-partitioned topic's name (default: -p<N>)")
    repartition.add_argument("--bootstrap-servers", help="overrides PLACEMENT_KAFKA__BOOTSTRAP_SERVERS")

    from streams.describe import add_arguments as add_describe_arguments
    from streams.whatif_command import add_arguments as add_what_if_arguments

    text = "what a Placement, PlacementRule or pod would get on the fleet as it is now, asked of any replica"
    add_what_if_arguments(sub.add_parser("what-if", help=text, description=text))
    text = "the group's members, task ownership, lag, restores, last commits and dead letters"
    add_describe_arguments(sub.add_parser("describe", help=text, description=text))

    demo = sub.add_parser("demo", help="local broker + processor + example advisors + example events")
    demo.add_argument("--keep-running", action="store_true", help="keep processing after the examples")
    demo.add_argument("--deployed-dir", type=Path, help="where the example deployer writes (.cache/demo-deployed)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script."""
    args = _parser().parse_args(argv)
    try:
        handler = _COMMANDS[args.command]
        return int(handler(args))
    except ServiceError as exc:
        print(str(exc), file=sys.stderr)
        return 1


# --- commands -------------------------------------------------------------------------------------
def _run(args: argparse.Namespace) -> int:
    from streams.logs import configure_logging
    from streams.service import Processor
    from streams.settings import load_settings

    overrides: dict[str, Any] = {}
    if args.bootstrap_servers:
        overrides["kafka"] = {"bootstrap_servers": args.bootstrap_servers}
    if args.queue_config:
        overrides["queue_config"] = args.queue_config
    if args.http_port is not None:
        overrides["http_port"] = args.http_port
    settings = load_settings(**overrides)
    configure_logging(settings.log_level)
    processor = Processor(settings)
    return asyncio.run(_serve(processor, settings.shutdown_timeout_seconds))


async def _serve(processor: Any, shutdown_timeout: float) -> int:
    from streams.logs import on_loop_exception

    loop = asyncio.get_running_loop()
    loop.set_exception_handler(on_loop_exception)
    signals = {"count": 0}

    def on_signal() -> None:
        signals["count"] += 1
        if signals["count"] > 1:
            os._exit(130)  # a second signal means "now"
        processor.request_stop()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal)
    task = asyncio.create_task(processor.run())
    stopping = asyncio.create_task(processor.stop_requested())
    await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
    try:
        await asyncio.wait_for(task, shutdown_timeout if stopping.done() else None)
    except TimeoutError:
        print(f"shutdown took longer than {shutdown_timeout}s; exiting", file=sys.stderr)
        return 1
    finally:
        stopping.cancel()
    return 0


@contextlib.contextmanager
def _lines(name: str) -> Iterator[Any]:
    if name == "-":
        yield iter(sys.stdin.buffer.readline, b"")
    else:
        with open(name, "rb") as handle:
            yield handle


def _replay(args: argparse.Namespace) -> int:
    from streams.replay import PEOPLE_ROLES, Replayer
    from streams.settings import load_settings

    settings = load_settings(explain=[f"Placement/{p}" for p in args.explain])
    if args.advisor_timeout:
        settings = settings.model_copy(update={"advisor_timeout_seconds": args.advisor_timeout})
    replayer = Replayer(
        settings,
        sys.stdout.buffer,
        queue_config=args.queue_config,
        show=None if args.all else PEOPLE_ROLES,
        on_dead_letter=lambda text: print(text, file=sys.stderr, flush=True),
    )
    with _lines(args.file) as lines:
        bad = replayer.run(lines)
    if bad or replayer.dead_letters:
        print(f"{bad} line(s) could not be replayed, {replayer.dead_letters} record(s) dead-lettered", file=sys.stderr)
        return 0 if args.keep_going else 1
    return 0


def _explain(args: argparse.Namespace) -> int:
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
    from streams.replay import Replayer
    from streams.settings import load_settings

    with open(os.devnull, "wb") as discard, _lines(args.file) as lines:  # only the state afterwards matters
        replayer = Replayer(load_settings(explain=[key]), discard, queue_config=args.queue_config)
        replayer.run(lines)
    return replayer.runtime.explain(key, replayer.now)


def _explain_remote(url: str, key: str) -> dict[str, Any] | None:
    """Any instance answers: the owner of the subject, or another forwarding to it (platform P17)."""
    from urllib.parse import quote

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


def _schemas(args: argparse.Namespace) -> int:
    from topics.schemas import all_event_schemas

    documents = all_event_schemas()
    if args.out is None:
        sys.stdout.buffer.write(orjson.dumps(documents, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    for wire_type, schema in documents.items():
        (args.out / f"{wire_type}.schema.json").write_bytes(orjson.dumps(schema, option=orjson.OPT_INDENT_2))
    print(f"wrote {len(documents)} schemas to {args.out}")
    return 0


def _check_config(args: argparse.Namespace) -> int:
    from streams.queueconfig import check_config

    return check_config(args.file)


def _broker(args: argparse.Namespace) -> int:
    from localbroker.cli import run_command

    return run_command(args)


def _apply(args: argparse.Namespace) -> int:
    from streams.apply.command import main_from_args

    return main_from_args(args, delete=args.command == "delete")


def _manifests(args: argparse.Namespace) -> int:
    from streams.manifests.command import main_from_args

    return main_from_args(args)


def _watch(args: argparse.Namespace) -> int:
    from streams.logs import configure_logging
    from streams.settings import load_settings
    from streams.watch.command import run_watch

    overrides: dict[str, Any] = {}
    if args.bootstrap_servers:
        overrides["kafka"] = {"bootstrap_servers": args.bootstrap_servers}
    settings = load_settings(**overrides)
    configure_logging(settings.log_level)
    return run_watch(args, settings)


def _repartition(args: argparse.Namespace) -> int:
    from streams.repartition import repartition, settings_lines
    from streams.settings import load_settings

    if args.partitions < 1:
        print("placement-stream repartition: --partitions must be at least 1", file=sys.stderr)
        return 2
    overrides: dict[str, Any] = {}
    if args.bootstrap_servers:
        overrides["kafka"] = {"bootstrap_servers": args.bootstrap_servers}
    settings = load_settings(**overrides)
    suffix = args.suffix or f"-p{args.partitions}"
    target = asyncio.run(
        repartition(settings, args.partitions, suffix, lambda line: print(line, file=sys.stderr, flush=True))
    )
    print("\n".join(settings_lines(target, args.partitions)))
    return 0


def _demo(args: argparse.Namespace) -> int:
    from streams.demo import main as demo_main

    return demo_main(keep_running=args.keep_running, deployed=args.deployed_dir)


def _what_if(args: argparse.Namespace) -> int:
    from streams.whatif_command import main_from_args

    return main_from_args(args)


def _describe(args: argparse.Namespace) -> int:
    from streams.describe import main_from_args

    return main_from_args(args)


_COMMANDS = {
    "run": _run,
    "replay": _replay,
    "explain": _explain,
    "schemas": _schemas,
    "check-config": _check_config,
    "repartition": _repartition,
    "broker": _broker,
    "apply": _apply,
    "delete": _apply,
    "manifests": _manifests,
    "watch": _watch,
    "demo": _demo,
    "what-if": _what_if,
    "describe": _describe,
}
