"""AddOn prioritizer (spec F6–F8): a score published by an add-on in an AddOnPlacementScore."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import ClassVar

import numpy as np

from engine.cluster.fleet.ids import Ids
from engine.cluster.fleet.views import InventoryView
from engine.cluster.pipeline.framework import EvalContext, ScoreResult, ValueRange
from engine.cluster.pipeline.status import Code, PluginStatus

__all__ = ["AddOnPrioritizer"]

_ONE_SECOND = timedelta(seconds=1)


class AddOnPrioritizer:
    """Reads `<resourceName>` in each cluster's namespace and takes the score named `<scoreName>`."""

    NAME: ClassVar[str] = "AddOn"

    def __init__(self, resource_name: str, score_name: str) -> None:
        self.resource_name = resource_name
        self.score_name = score_name

    @property
    def name(self) -> str:
        """`AddOn/<resourceName>/<scoreName>` (F9)."""
        return f"{self.NAME}/{self.resource_name}/{self.score_name}"

    def score(self, ctx: EvalContext, candidates: Ids) -> ScoreResult:
        """0 by default; expired scores give 0 and a Warning; unexpired ones set a timer at validUntil + 1 s."""
        inventory, now = ctx.inventory, ctx.now
        scores = np.zeros(len(candidates), dtype=np.int64)
        expired: list[str] = []
        due: list[datetime] = []
        for at, name in enumerate(ctx.fleet.names_of(candidates)):
            obj = inventory.score(name, self.resource_name)
            if obj is None:
                continue
            valid_until = obj.status.valid_until
            if valid_until is not None:
                if now > valid_until:
                    expired.append(name)
                    continue
                due.append(valid_until + _ONE_SECOND)
            for item in obj.status.scores:
                if item.name == self.score_name:
                    scores[at] = item.value
        status = PluginStatus()
        if expired:
            listed = " ".join(f"{name}/{self.resource_name}" for name in sorted(expired))
            status = PluginStatus(Code.WARNING, self.name, f"AddOnPlacementScores {listed} expired")
        return ScoreResult(scores, status=status, due=tuple(due))

    def leaving_matters(
        self, view: InventoryView, now: datetime, cluster: str, ranges: Mapping[str, ValueRange] | None
    ) -> bool:
        """Scores are per cluster, but an expired score of the departing cluster is named in the Warning (F8)."""
        obj = view.inventory.score(cluster, self.resource_name)
        valid_until = None if obj is None else obj.status.valid_until
        return valid_until is not None and now > valid_until
