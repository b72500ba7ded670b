"""UnreadableState: the errors of reading a changelog entry become InvalidStateError, naming the entry; any
other error is left as it is (an engine bug must not pass for a bad entry)."""

from __future__ import annotations

import pytest

from engine.errors import InvalidStateError, UnreadableState

READING = UnreadableState("changelog entry Placement/apps/web cannot be read", (KeyError, ValueError))


@pytest.mark.parametrize(
    ("raised", "message"),
    [
        (KeyError("published"), "changelog entry Placement/apps/web cannot be read: 'published'"),
        (ValueError("bad time"), "changelog entry Placement/apps/web cannot be read: bad time"),
    ],
)
def test_reading_errors_become_invalid_state_naming_the_entry(raised: Exception, message: str) -> None:
    with pytest.raises(InvalidStateError) as caught, READING:
        raise raised
    assert str(caught.value) == message
    assert caught.value.__cause__ is raised


@pytest.mark.parametrize("raised", [RuntimeError("engine bug"), TypeError("not listed")])
def test_other_errors_pass_through_as_they_are(raised: Exception) -> None:
    with pytest.raises(type(raised)) as caught, READING:
        raise raised
    assert caught.value is raised


def test_one_instance_serves_every_entry_in_turn() -> None:
    for _ in range(2):
        with pytest.raises(InvalidStateError), READING:
            raise KeyError("x")
    with READING:
        pass
