"""The OCM deployer: the decisions topic written into the API server as upstream's placement controller would.

    python -m deployers.ocm --kubeconfig hub.kubeconfig --bootstrap 127.0.0.1:9092 [--topic-prefix PREFIX]
        [--decision-api ocm|cluster-inventory ...] [--cluster-profile-namespace NS]

For each Placement handed over with `cluster.open-cluster-management.io/experimental-scheduling-disable: "true"`
it writes the PlacementDecision pages and the Placement's status (`writer.py`, in the order `plan.py` gives), as
OCM's PlacementDecisions, SIG-Multicluster's, or both (`apis.py`).
At start it reads the whole topic (`deployers.follow`) and then makes every handed-over Placement match its last
decision, and deletes the pages of Placements deleted while it was down. A write that fails (the API server
unreachable, a refusal) is logged and tried again every `retry_seconds` with the subject's latest decision.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx2
from lightkube import ApiError, AsyncClient

from connection.errors import KubeConfigError
from connection.kubernetes import kube_config
from deployers.follow import KafkaSource, add_kafka_arguments, follow_decisions, run_deployer
from deployers.ocm.apis import DECISION_APIS, OCM_DECISIONS, DecisionApi, decision_api
from deployers.ocm.decision import ocm_document
from deployers.ocm.writer import PlacementWriter
from deployers.state import Change, DecisionTable

__all__ = ["OcmDeployer", "deploy_ocm", "main"]

_log = logging.getLogger("deployers.ocm")


class OcmDeployer:
    """The API server as a decision sink."""

    def __init__(
        self,
        client: AsyncClient,
        *,
        apis: Sequence[DecisionApi] = (OCM_DECISIONS,),
        retry_seconds: float = 1.0,
        caught_up: asyncio.Event | None = None,
    ) -> None:
        self._client = client
        self._writers = [PlacementWriter(client, api) for api in apis]
        self._retry_seconds = retry_seconds
        self._caught_up = caught_up
        self._current: Mapping[str, dict[str, Any]] = {}
        self._failed: set[str] = set()
        self._next_retry = 0.0

    async def caught_up(self, current: Mapping[str, dict[str, Any]]) -> None:
        self._current = current  # the table itself: it is kept current as the topic is followed
        left = await self._left_behind(current)
        for subject in sorted({*current, *left}):
            await self._converge(subject)
        _log.info("caught up: %d placements, %d failed", len(current), len(self._failed))
        if self._caught_up is not None:
            self._caught_up.set()

    async def changed(self, changes: Mapping[str, Change]) -> None:
        for subject in changes:
            await self._converge(subject)
        loop = asyncio.get_running_loop()
        if self._failed and loop.time() >= self._next_retry:
            for subject in sorted(self._failed):
                await self._converge(subject)

    async def _left_behind(self, current: Mapping[str, Any]) -> set[str]:
        """Placements with pages but no decision (deleted while the deployer was down)."""
        subjects: set[str] = set()
        for api in (writer.api for writer in self._writers):
            label = api.placement_label
            try:
                pages = [
                    p.to_dict() async for p in self._client.list(api.resource, namespace="*", labels={label: None})
                ]
            except (ApiError, httpx2.HTTPError) as exc:
                _log.warning(
                    "listing %s failed (%s); pages left behind stay until the next start", api.api_version, exc
                )
                continue
            subjects |= {f"Placement/{p['metadata']['namespace']}/{p['metadata']['labels'][label]}" for p in pages}
        return subjects - set(current)

    async def _converge(self, subject: str) -> None:
        if not subject.startswith("Placement/"):
            return
        _, namespace, name = subject.split("/")
        try:
            done = [
                line
                for writer in self._writers
                for line in await writer.converge(namespace, name, self._current.get(subject))
            ]
        except (ApiError, httpx2.HTTPError) as exc:
            _log.warning("%s: writing failed (%s); retrying in %.0f s", subject, exc, self._retry_seconds)
            self._failed.add(subject)
            self._next_retry = asyncio.get_running_loop().time() + self._retry_seconds
            return
        self._failed.discard(subject)
        for line in done:
            _log.info("%s: %s", subject, line)


async def deploy_ocm(
    source: KafkaSource,
    client: AsyncClient,
    stop: asyncio.Event,
    *,
    apis: Sequence[DecisionApi] = (OCM_DECISIONS,),
    caught_up: asyncio.Event | None = None,
    retry_seconds: float = 1.0,
) -> None:
    """Run until `stop` is set; `caught_up` is set once the API server matches the topic as it was at start."""
    table = DecisionTable(ocm_document)
    sink = OcmDeployer(client, apis=apis, retry_seconds=retry_seconds, caught_up=caught_up)
    await follow_decisions(source, table, sink, stop, client_id="deployer-ocm")


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; SIGTERM or SIGINT stops it, exit 1 when Kafka fails, 2 on bad settings."""
    parser = argparse.ArgumentParser(
        prog="python -m deployers.ocm",
        description="OCM deployer: PlacementDecisions and Placement status of handed-over Placements.",
        epilog="Kafka TLS and SASL settings are read from the environment, as the processor reads them "
        "(PLACEMENT_KAFKA__SECURITY_PROTOCOL, ...).",
    )
    add_kafka_arguments(parser)
    parser.add_argument("--kubeconfig", type=Path, help="kubeconfig file (default: in-cluster, $KUBECONFIG, ~/.kube)")
    parser.add_argument("--context", help="kubeconfig context (default: its current context)")
    parser.add_argument(
        "--decision-api",
        action="append",
        choices=DECISION_APIS,
        help="which PlacementDecisions to write: OCM's (cluster.open-cluster-management.io, the default) or "
        "SIG-Multicluster's (multicluster.x-k8s.io, cluster-inventory-api); repeat it for both",
    )
    parser.add_argument(
        "--cluster-profile-namespace",
        help="with cluster-inventory: the namespace of the ClusterProfiles the decisions name (default: the "
        "decision's own namespace)",
    )
    args = parser.parse_args(argv)
    apis = [decision_api(name, args.cluster_profile_namespace) for name in dict.fromkeys(args.decision_api or ["ocm"])]
    try:
        config = kube_config(args.kubeconfig, args.context)
    except KubeConfigError as exc:
        print(f"deployer: {exc}", file=sys.stderr)
        return 2

    async def run(source: KafkaSource, stop: asyncio.Event) -> None:
        client = AsyncClient(config=config.get(context_name=args.context) if args.context else config)
        try:
            await deploy_ocm(source, client, stop, apis=apis)
        finally:
            await client.close()

    return run_deployer("deployer", args, run)


if __name__ == "__main__":
    sys.exit(main())
