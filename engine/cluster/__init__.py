"""Cluster placement engine: Open Cluster Management Placement v1beta1 semantics as pure functions.

The pipeline (`pipeline.evaluate.evaluate`) is a pure function of one placement's inputs;
`ClusterPlacementEngine` (`engine.py`) wraps it as a SubjectEngine with indexes for affected placements and
Balance counts. Sub-packages, each importing only those before it: `matching` (selectors, CEL), `fleet`
(cluster ids, inventory views), `pipeline` (evaluation, plugins, spread), `tracking` (state, indexes, affected
placements, events), `explain`.
"""

from engine.cluster.engine import ClusterPlacementEngine
from engine.cluster.explain.placement import explain_placement
from engine.cluster.tracking.state import PlacementState

__all__ = ["ClusterPlacementEngine", "PlacementState", "explain_placement"]
