"""`placement-stream` command line: run, replay, explain, schemas, check-config, broker, apply, delete,
manifests, watch, repartition, what-if, describe, demo."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from cli.explain import add_arguments as add_explain_arguments
from cli.explain import explain
from localbroker.commands import add_commands as add_broker_commands
from streams.cli import COMMANDS as SERVICE_COMMANDS
from streams.cli import Command, add_commands, new_parser, run_command

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser, sub = new_parser(__doc__)
    add_commands(sub)

    add_explain_arguments(
        sub.add_parser(
            "explain", help="how one subject was decided: after replaying FILE, or from a running processor (--url)"
        )
    )

    broker = sub.add_parser(
        "broker",
        help="local Apache Kafka for development: fetch | start | stop | status",
        description="A local single-node Apache Kafka broker without Docker (plaintext, or --secure).",
    )
    add_broker_commands(broker)

    from cli.apply.arguments import add_arguments as add_apply_arguments

    for verb, text in (
        ("apply", "publish Kubernetes YAML/JSON documents as the contract's events (like kubectl apply -f)"),
        ("delete", "publish the deletion of the objects the documents name (like kubectl delete -f)"),
    ):
        add_apply_arguments(sub.add_parser(verb, help=text, description=text), delete=verb == "delete")

    from cli.watch.command import add_arguments as add_watch_arguments

    text = "publish a Kubernetes API server's OCM objects as apply -f would, continuously (list, then watch)"
    add_watch_arguments(sub.add_parser("watch", help=text, description=text))

    from cli.describe import add_arguments as add_describe_arguments
    from cli.whatif import add_arguments as add_what_if_arguments

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
    return run_command(_parser(), _COMMANDS, argv)


# --- commands -------------------------------------------------------------------------------------
def _broker(args: argparse.Namespace) -> int:
    from localbroker.cli import run_command as run_broker_command

    return run_broker_command(args)


def _apply(args: argparse.Namespace) -> int:
    from cli.apply.command import main_from_args

    return main_from_args(args, delete=args.command == "delete")


def _watch(args: argparse.Namespace) -> int:
    from cli.watch.command import run_watch
    from streams.logs import configure_logging
    from streams.settings import load_settings

    overrides: dict[str, Any] = {}
    if args.bootstrap_servers:
        overrides["kafka"] = {"bootstrap_servers": args.bootstrap_servers}
    settings = load_settings(**overrides)
    configure_logging(settings.log_level)
    return run_watch(args, settings)


def _demo(args: argparse.Namespace) -> int:
    from cli.demo import main as demo_main

    return demo_main(keep_running=args.keep_running, deployed=args.deployed_dir)


def _what_if(args: argparse.Namespace) -> int:
    from cli.whatif import main_from_args

    return main_from_args(args)


def _describe(args: argparse.Namespace) -> int:
    from cli.describe import main_from_args

    return main_from_args(args)


_COMMANDS: dict[str, Command] = {
    **SERVICE_COMMANDS,
    "explain": explain,
    "broker": _broker,
    "apply": _apply,
    "delete": _apply,
    "watch": _watch,
    "demo": _demo,
    "what-if": _what_if,
    "describe": _describe,
}
