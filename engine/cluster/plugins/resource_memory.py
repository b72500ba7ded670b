"""ResourceAllocatableMemory prioritizer (spec F4): more allocatable memory scores higher."""

from __future__ import annotations

from typing import ClassVar

from engine.cluster.plugins.resource import ResourceAllocatablePrioritizer

__all__ = ["ResourceAllocatableMemoryPrioritizer"]


class ResourceAllocatableMemoryPrioritizer(ResourceAllocatablePrioritizer):
    """Scores `status.allocatable.memory`."""

    NAME: ClassVar[str] = "ResourceAllocatableMemory"
    RESOURCE: ClassVar[str] = "memory"
