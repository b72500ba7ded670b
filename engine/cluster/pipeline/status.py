"""Plugin results as values: "no match" and misconfiguration are statuses, never exceptions."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = ["SUCCESS", "Code", "PluginStatus"]


class Code(Enum):
    """Upstream's framework status codes, reduced to the ones the pipeline distinguishes."""

    SUCCESS = "Success"
    WARNING = "Warning"
    MISCONFIGURED = "Misconfigured"
    ERROR = "Error"


@dataclass(frozen=True, slots=True)
class PluginStatus:
    """The outcome of one pipeline step; `plugin` is empty for weight, selection and group errors (spec J1)."""

    code: Code = Code.SUCCESS
    plugin: str = ""
    message: str = ""

    @property
    def failed(self) -> bool:
        """Misconfigured or Error: scheduling stops (spec B4)."""
        return self.code in (Code.MISCONFIGURED, Code.ERROR)

    def condition_message(self) -> str:
        """`<plugin>:<message>`, the PlacementMisconfigured message."""
        return f"{self.plugin}:{self.message}"

    @classmethod
    def misconfigured(cls, plugin: str, message: str) -> PluginStatus:
        """A Misconfigured status."""
        return cls(Code.MISCONFIGURED, plugin, message)


SUCCESS = PluginStatus()
