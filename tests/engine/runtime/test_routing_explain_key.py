"""`explain_key`: what an explain request may name (CLI `--placement`, HTTP `/explain/<key>`), and the one-line
error every other spelling gets."""

from __future__ import annotations

import pytest

from engine.errors import RoutingError
from engine.runtime.routing import explain_key, subject_kind


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("apps/web", "Placement/apps/web"),
        ("Placement/apps/web", "Placement/apps/web"),
        ("  apps/web\n", "Placement/apps/web"),
        ("PlacementRule/apps/db", "PlacementRule/apps/db"),
        ("Application/default", "Application/default"),
        ("Application/gpu", "Application/gpu"),
        ("placement/web", "Placement/placement/web"),  # a lower-case namespace, not the kind
        ("ns-1/name.with.dots", "Placement/ns-1/name.with.dots"),
    ],
)
def test_good_keys_are_normalised_to_a_subject_key(text: str, key: str) -> None:
    assert explain_key(text) == key
    subject_kind(key)  # the runtime's own shape check agrees


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "expected NS/NAME (a placement), Placement/NS/NAME"),
        ("web", "expected NS/NAME (a placement)"),
        ("apps/web/extra", "expected NS/NAME (a placement)"),
        ("Deployer/apps/web", "expected NS/NAME (a placement)"),
        ("/", "expected NS/NAME or Placement/NS/NAME"),
        ("apps/", "expected NS/NAME or Placement/NS/NAME"),
        ("/web", "expected NS/NAME or Placement/NS/NAME"),
        ("Placement/web", "expected NS/NAME or Placement/NS/NAME"),
        ("Placement/Placement/apps/web", "expected NS/NAME or Placement/NS/NAME"),
        ("Placement//web", "expected NS/NAME or Placement/NS/NAME"),
        ("PlacementRule/db", "expected PlacementRule/NS/NAME"),
        ("PlacementRule/apps/db/x", "expected PlacementRule/NS/NAME"),
        ("Application/", "expected Application/PARTITION"),
        ("Application/default/apps/app-1", "expected Application/PARTITION"),
        ("apps/w eb", "no spaces or control characters"),
        ("apps/web\x00", "no spaces or control characters"),
        ("Application/a\nb", "no spaces or control characters"),
    ],
)
def test_malformed_keys_raise_one_line_naming_the_input(text: str, expected: str) -> None:
    with pytest.raises(RoutingError) as raised:
        explain_key(text)
    message = str(raised.value)
    assert expected in message
    assert message.startswith(f"{text!r} is not a subject key")
    assert "\n" not in message
