"""Errors raised while decoding or validating records."""

from __future__ import annotations

__all__ = ["ContractError", "DecodeError", "SchemaError", "UnknownEventTypeError"]


class ContractError(Exception):
    """Root of every error in the contract package."""


class DecodeError(ContractError):
    """The bytes are not a JSON CloudEvent."""


class UnknownEventTypeError(ContractError):
    """The event type or its version is not one this service knows."""


class SchemaError(ContractError):
    """The event is well-formed JSON but violates the envelope or data schema."""
