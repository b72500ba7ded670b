"""The README's configuration table and the settings model name the same variables: a setting added without a
row, or a row left behind by a setting removed, fails here."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel

from streams.settings import KafkaSettings, Settings

README = Path(__file__).resolve().parents[2] / "README.md"
_VARIABLE = re.compile(r"`(PLACEMENT_[A-Z0-9_<>]+)`")


def _table_variables() -> set[str]:
    text = README.read_text()
    table = text[text.index("## Configuration") :]
    table = table[: table.index("\n\n", table.index("| variable |"))]
    names: set[str] = set()
    for row in table.splitlines():
        if row.startswith("| `PLACEMENT_"):
            names.update(_VARIABLE.findall(row.split("|")[1]))
    return names


def _model_variables(model: type[BaseModel], prefix: str) -> set[str]:
    names: set[str] = set()
    for name, field in model.model_fields.items():
        if field.annotation is KafkaSettings:
            names |= _model_variables(KafkaSettings, f"{prefix}{name.upper()}__")
        elif name == "topics":
            names.add(f"{prefix}TOPICS__<ROLE>")
        else:
            names.add(f"{prefix}{name.upper()}")
    return names


def test_every_setting_has_a_row_and_every_row_a_setting() -> None:
    documented = _table_variables()
    expected = _model_variables(Settings, "PLACEMENT_")
    assert expected - documented == set(), "settings without a README row"
    assert documented - expected == set(), "README rows without a setting"
