"""The service's commands: run, replay, schemas, check-config, manifests, repartition.

`placement-stream` (cli/main.py) adds the client tools to them; `python -m streams` runs these alone, so the
service never imports the tools.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from connection.errors import ConnectionSetupError
from streams.errors import ServiceError
from streams.version import VERSION

__all__ = ["COMMANDS", "add_commands", "input_lines", "main", "new_parser", "run_command"]

Command = Callable[[argparse.Namespace], int]


def new_parser(description: str | None) -> tuple[argparse.ArgumentParser, Any]:
    """The `placement-stream` parser with `--version`, and its subcommands' action."""
    parser = argparse.ArgumentParser(prog="placement-stream", description=description)
    parser.add_argument("--version", action="version", version=f"%(prog)s {VERSION}")
    return parser, parser.add_subparsers(dest="command", required=True)


def run_command(parser: argparse.ArgumentParser, commands: Mapping[str, Command], argv: list[str] | None) -> int:
    """Parse `argv` and run its command; an error of the service or of its connection is one line, exit 1."""
    args = parser.parse_args(argv)
    try:
        return int(commands[args.command](args))
    except (ServiceError, ConnectionSetupError) as exc:
        print(str(exc), file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    """`python -m streams`: the service's commands alone."""
    parser, sub = new_parser(__doc__)
    add_commands(sub)
    return run_command(parser, COMMANDS, argv)


def add_commands(sub: Any) -> None:
    """Add the service's subcommands to a parser's subcommands action."""
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

    schemas = sub.add_parser(
        "schemas", help="write the JSON Schema of every event type: the CloudEvents envelope with its data"
    )
    schemas.add_argument("--out", type=Path, help="folder for one <type>.schema.json per event (default: stdout)")

    check = sub.add_parser(
        "check-config", help="validate a YuniKorn queue configuration file, or its ConfigMap, without running"
    )
    check.add_argument("file", type=Path)

    from streams.manifests.arguments import add_arguments as add_manifests_arguments

    add_manifests_arguments(
        sub.add_parser("manifests", help="Kubernetes resources for the service: strimzi (KafkaTopic, KafkaUser)")
    )

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
def input_lines(name: str) -> Iterator[Any]:
    """A replay input: the file, or for `-` stdin read a line at a time (a pipe is replayed as it comes)."""
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
    with input_lines(args.file) as lines:
        bad = replayer.run(lines)
    if bad or replayer.dead_letters:
        print(f"{bad} line(s) could not be replayed, {replayer.dead_letters} record(s) dead-lettered", file=sys.stderr)
        return 0 if args.keep_going else 1
    return 0


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


def _manifests(args: argparse.Namespace) -> int:
    from streams.manifests.command import main_from_args

    return main_from_args(args)


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


COMMANDS: dict[str, Command] = {
    "run": _run,
    "replay": _replay,
    "schemas": _schemas,
    "check-config": _check_config,
    "repartition": _repartition,
    "manifests": _manifests,
}
