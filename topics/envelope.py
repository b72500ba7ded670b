"""The CloudEvents 1.0 structured-JSON envelope every record value uses."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CONTENT_TYPE", "SOURCE", "CloudEvent"]

CONTENT_TYPE = "application/cloudevents+json; charset=UTF-8"
SOURCE = "/placement-stream"


class CloudEvent(BaseModel):
    """Envelope attributes; extension attributes (e.g. `partitionkey`) are kept as extra fields."""

    model_config = ConfigDict(frozen=True, extra="allow")

    specversion: Literal["1.0"]
    id: str = Field(min_length=1)
    source: str = Field(min_length=1)
    type: str = Field(min_length=1)
    time: datetime | None = None
    subject: str | None = None
    datacontenttype: str | None = "application/json"
    data: Any = None
