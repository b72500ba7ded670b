"""The pure processing path: batches of records through the engines, shared by Kafka and replay."""

from engine.runtime.processor import Runtime
from engine.runtime.records import Handover, Incident, InputRecord, Misplaced, OutputRecord, Stage

__all__ = ["Handover", "Incident", "InputRecord", "Misplaced", "OutputRecord", "Runtime", "Stage"]
