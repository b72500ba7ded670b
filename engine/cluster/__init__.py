"""Cluster placement engine: Open Cluster Management Placement v1beta1 semantics as pure functions.

The pipeline (`pipeline.evaluate`) is a pure function of one placement's inputs; `ClusterPlacementEngine`
wraps it as a SubjectEngine with indexes for affected placements and Balance counts.
"""

from engine.cluster.engine import ClusterPlacementEngine
from engine.cluster.explain import explain_placement
from engine.cluster.state import PlacementState

__all__ = ["ClusterPlacementEngine", "PlacementState", "explain_placement"]
