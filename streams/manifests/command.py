"""`placement-stream manifests strimzi`: the Strimzi resources for the topics and principals, on stdout or as files."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import yaml

from streams.manifests.arguments import TOPICS_FILE, USERS_FILE
from streams.manifests.strimzi import ClientUsers, StrimziOptions, topics, users
from streams.settings import load_settings

__all__ = ["main_from_args"]


def main_from_args(args: argparse.Namespace) -> int:
    """Print or write the resources; bad counts are usage errors (exit 2)."""
    for flag, value in (("--partitions", args.partitions), ("--replicas", args.replicas)):
        if value is not None and value < 1:
            print(f"placement-stream manifests strimzi: {flag} must be at least 1", file=sys.stderr)
            return 2
    options = StrimziOptions(
        cluster=args.cluster,
        namespace=args.namespace,
        api_version=f"kafka.strimzi.io/{args.api_version}",
        authentication=args.authentication,
        partitions=args.partitions,
        replicas=args.replicas,
        clients=ClientUsers(tuple(args.advisors), tuple(args.inventory_advisors), args.deployer_group),
    )
    settings = load_settings()
    documents = {TOPICS_FILE: topics(settings, options), USERS_FILE: users(settings, options)}
    if args.out is None:
        sys.stdout.write(_yaml([d for group in documents.values() for d in group]))
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    for file_name, resources in documents.items():
        (args.out / file_name).write_text(_yaml(resources), encoding="utf-8")
    print(f"wrote {sum(map(len, documents.values()))} resources to {args.out}: {', '.join(documents)}")
    return 0


def _yaml(documents: list[dict[str, Any]]) -> str:
    text: str = yaml.safe_dump_all(documents, sort_keys=False, explicit_start=True, width=120)
    return text
