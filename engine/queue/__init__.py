"""Queue placement (Apache YuniKorn placement rules): configuration, rules, queue tree and the engine."""

from engine.queue.config import QueueConfig, load_queue_config
from engine.queue.engine import QueueEngine, apply_config, complete, place
from engine.queue.placement import Placed, PlacementOutcome, Rejected, Submission
from engine.queue.state import PartitionState

__all__ = [
    "PartitionState",
    "Placed",
    "PlacementOutcome",
    "QueueConfig",
    "QueueEngine",
    "Rejected",
    "Submission",
    "apply_config",
    "complete",
    "load_queue_config",
    "place",
]
