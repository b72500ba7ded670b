"""The options of `manifests` (argparse only: the command line builds its parser without Kafka's client)."""

from __future__ import annotations

import argparse
from pathlib import Path

from streams.manifests import API_VERSIONS, AUTHENTICATIONS

__all__ = ["TOPICS_FILE", "USERS_FILE", "add_arguments"]

TOPICS_FILE = "kafka-topics.yaml"
USERS_FILE = "kafka-users.yaml"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`manifests strimzi` and its options; topic names, the group and the partition count come from the settings
    (PLACEMENT_TOPICS__*, PLACEMENT_KAFKA__GROUP_ID, PLACEMENT_KAFKA__TASK_PARTITIONS), as the processor reads them."""
    kinds = parser.add_subparsers(dest="manifests", required=True)
    strimzi = kinds.add_parser(
        "strimzi",
        help="KafkaTopic and KafkaUser resources: the topics and each principal's least-privilege ACLs",
        description="Strimzi KafkaTopic resources for every topic (partitions and configs as the processor creates "
        "them) and KafkaUser resources for the processor, a submitter, a deployer and the named advisors, with "
        "the ACLs of docs/security.md. Names follow the PLACEMENT_* settings.",
    )
    strimzi.add_argument("--out", type=Path, help=f"folder for {TOPICS_FILE} and {USERS_FILE} (default: stdout)")
    strimzi.add_argument("--cluster", default="my-cluster", help="the Strimzi Kafka resource (strimzi.io/cluster)")
    strimzi.add_argument("-n", "--namespace", help="namespace of every resource (default: none, kubectl's)")
    strimzi.add_argument("--api-version", choices=[v.rpartition("/")[2] for v in API_VERSIONS], default="v1")
    strimzi.add_argument("--authentication", choices=AUTHENTICATIONS, default="scram-sha-512")
    strimzi.add_argument("--partitions", type=int, help="of co-partitioned topics (default: the task partitions)")
    strimzi.add_argument("--replicas", type=int, help="of every topic (default PLACEMENT_KAFKA__REPLICATION_FACTOR)")
    strimzi.add_argument(
        "--advisor", dest="advisors", action="append", default=[], metavar="NAME", help="a user advisor-NAME"
    )
    strimzi.add_argument(
        "--inventory-advisor",
        dest="inventory_advisors",
        action="append",
        default=[],
        metavar="NAME",
        help="a user advisor-NAME that also reads cluster status (as the example cpu_priority)",
    )
    strimzi.add_argument("--deployer-group", help="the deployer's consumer group (default <group>-deployer)")
