"""The options of `apply` and `delete` (argparse only: the command line builds its parser without the models)."""

from __future__ import annotations

import argparse

__all__ = ["add_arguments"]


def add_arguments(parser: argparse.ArgumentParser, *, delete: bool) -> None:
    """`-f FILE|DIR|-` (repeatable), `-R`, `-n`, `--dry-run`, `--resource-kind`, `--time`, `--bootstrap-servers`."""
    verb = "delete" if delete else "publish"
    parser.add_argument(
        "-f",
        "--filename",
        dest="paths",
        action="append",
        required=True,
        metavar="FILE|DIR|-",
        help=f"YAML or JSON documents to {verb}: a file, a directory of .yaml/.yml/.json files, or - for stdin",
    )
    parser.add_argument("-R", "--recursive", action="store_true", help="read directories recursively")
    parser.add_argument(
        "-n", "--namespace", default="default", help="namespace of namespaced objects that name none (default)"
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the records as replay input lines instead of publishing them (a converter for replay)",
    )
    parser.add_argument(
        "--resource-kind",
        dest="resource_kinds",
        action="append",
        default=[],
        metavar="KIND",
        help="also accept this kind as an inventory resource (resource.applied), e.g. VirtualMachine",
    )
    parser.add_argument("--time", metavar="RFC3339", help="event time of every record (default: now)")
    parser.add_argument("--bootstrap-servers", help="overrides PLACEMENT_KAFKA__BOOTSTRAP_SERVERS")
