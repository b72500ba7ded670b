"""Kubernetes resources the service's deployment needs, made from the same tables the service runs on."""

from __future__ import annotations

__all__ = ["API_VERSIONS", "AUTHENTICATIONS"]

API_VERSIONS = ("kafka.strimzi.io/v1", "kafka.strimzi.io/v1beta2")
"""Strimzi's API versions, the default first: v1 is served from Strimzi 0.49 on and is the only one from 1.0 on;
v1beta2 from 0.22 to 0.51. The resources made here are the same in both."""
AUTHENTICATIONS = ("scram-sha-512", "tls", "tls-external")
"""Strimzi's KafkaUser authentication types."""
