"""set_conditions (spec J4): lastTransitionTime moves only when a condition's status flips; a condition that did
not change at all is carried over as it was."""

from __future__ import annotations

from datetime import timedelta

import pytest

from engine.cluster.pipeline.conditions import set_conditions
from tests.engine.cluster.cluster_builders import NOW
from topics.interning import Interning
from topics.k8s import Condition

LATER = NOW + timedelta(minutes=5)


def _condition(status: str = "True", message: str = "m", reason: str = "R", **more: object) -> Condition:
    return Condition.model_validate({"type": "T", "status": status, "reason": reason, "message": message, **more})


@pytest.mark.parametrize(
    ("new", "time", "same_object"),
    [
        (_condition(), NOW, True),
        (_condition(message="other"), NOW, False),
        (_condition(reason="Other"), NOW, False),
        (_condition(observedGeneration=3), NOW, False),
        (_condition(status="False"), LATER, False),
    ],
    ids=["unchanged", "message", "reason", "observed-generation", "status-flip"],
)
def test_cluster_set_conditions_keeps_time_until_a_flip(new: Condition, time: object, same_object: bool) -> None:
    previous = _condition().model_copy(update={"last_transition_time": NOW})
    (result,) = set_conditions([previous], [new], LATER, Interning())
    assert result.last_transition_time == time
    assert result.model_copy(update={"last_transition_time": None}) == new
    assert (result is previous) is same_object


def test_cluster_set_conditions_new_type_gets_now() -> None:
    (result,) = set_conditions([], [_condition()], LATER, Interning())
    assert result.last_transition_time == LATER
