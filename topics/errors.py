"""The package's error root and the errors raised while decoding or validating records.

Every error the project raises derives from `PlacementStreamError`, and each class says at which stage a record
that raised it is dead-lettered (the `__connect.errors.stage` header), so the one place that dead-letters records
reads the stage from the error instead of testing its class.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "ContractError",
    "DecodeError",
    "PlacementStreamError",
    "SchemaError",
    "Stage",
    "UnknownEventTypeError",
    "stage_of",
]


class Stage:
    """Where a dead-lettered record failed (the `__connect.errors.stage` header)."""

    DECODE = "DECODE"
    VALIDATE = "VALIDATE"
    PROCESS = "PROCESS"


class PlacementStreamError(Exception):
    """Root of every error of placement-stream; `stage` is where a record that raised it is dead-lettered."""

    stage: ClassVar[str] = Stage.PROCESS


class ContractError(PlacementStreamError):
    """Root of every error in the contract package."""

    stage: ClassVar[str] = Stage.VALIDATE


class DecodeError(ContractError):
    """The bytes are not a JSON CloudEvent, or exceed the size or nesting a record may have."""

    stage: ClassVar[str] = Stage.DECODE


class UnknownEventTypeError(ContractError):
    """The event type or its version is not one this service knows."""


class SchemaError(ContractError):
    """The event is well-formed JSON but violates the envelope or data schema."""


def stage_of(error: BaseException, otherwise: str) -> str:
    """The dead-letter stage of any exception: the project's errors say it, bytes that are not UTF-8 failed to
    decode, and any other exception failed at the stage the caller was in (`otherwise`)."""
    if isinstance(error, PlacementStreamError):
        return error.stage
    if isinstance(error, UnicodeDecodeError):
        return Stage.DECODE
    return otherwise
