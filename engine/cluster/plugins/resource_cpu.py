"""ResourceAllocatableCPU prioritizer (spec F4): more allocatable cpu scores higher."""

from __future__ import annotations

from typing import ClassVar

from engine.cluster.plugins.resource import ResourceAllocatablePrioritizer

__all__ = ["ResourceAllocatableCPUPrioritizer"]


class ResourceAllocatableCPUPrioritizer(ResourceAllocatablePrioritizer):
    """Scores `status.allocatable.cpu`."""

    NAME: ClassVar[str] = "ResourceAllocatableCPU"
    RESOURCE: ClassVar[str] = "cpu"
