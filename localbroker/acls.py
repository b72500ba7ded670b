"""Grant ACLs on the secured local broker as its super user, so tests and demos can give each principal exactly
what the documentation lists (``kafka-acls.sh`` would need a JVM per call).

aiokafka has no public call for CreateAcls, so the request goes through the admin client's request method.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.protocol.admin import CreateAclsRequest

from localbroker.errors import LocalBrokerError

__all__ = ["AclError", "AclSpec", "grant"]

# Kafka's enum codes (org.apache.kafka.common.resource / acl).
RESOURCE_TYPES = {"Topic": 2, "Group": 3, "Cluster": 4, "TransactionalId": 5}
PATTERN_TYPES = {"LITERAL": 3, "PREFIXED": 4}
OPERATIONS = {
    "All": 2,
    "Read": 3,
    "Write": 4,
    "Create": 5,
    "Delete": 6,
    "Alter": 7,
    "Describe": 8,
    "DescribeConfigs": 10,
    "IdempotentWrite": 12,
}
ALLOW = 3


class AclError(LocalBrokerError):
    """The broker refused to create an ACL."""


class AclSpec(Protocol):
    """What one ACL names (streams.kafka.access.Grant has this shape)."""

    @property
    def resource_type(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def operation(self) -> str: ...
    @property
    def pattern(self) -> str: ...


async def grant(bootstrap: str, admin_options: dict[str, Any], principal: str, acls: Iterable[AclSpec]) -> int:
    """Allow `principal` (e.g. ``User:processor``) each ACL from any host; returns how many were created."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, **admin_options)
    await admin.start()
    count = 0
    try:
        for acl in acls:
            name = "kafka-cluster" if acl.resource_type == "Cluster" else acl.name
            request = CreateAclsRequest(
                RESOURCE_TYPES[acl.resource_type],
                name,
                PATTERN_TYPES[acl.pattern],
                principal,
                "*",
                OPERATIONS[acl.operation],
                ALLOW,
            )
            response: Any = await admin._send_request(request)
            for error_code, message in response.creation_responses:
                if error_code:
                    raise AclError(f"cannot grant {acl.operation} on {acl.resource_type} {name}: {message}")
            count += 1
    finally:
        await admin.close()
    return count
