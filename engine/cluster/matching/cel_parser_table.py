"""cel-python's CEL parser from a parse table shipped with the package, instead of one built at first use.

Lark builds the LALR table of the CEL grammar in about 0.1 s, and every process paid it with its first expression:
in a cold start, inside the first batch. The table is plain data, so it ships as JSON text in a generated module,
`cel_parser_table_data` (written by `scripts/cel_parser_table.py`; Lark's own cache would be a pickle), and is used
only while its fingerprint (cel-python's grammar, the parser options, lark's minor version) matches what is
installed; otherwise the parser is built as before. The tests compare the loaded parser with cel-python's own
on every construct of the grammar.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from pathlib import Path
from typing import Any

import lark
from celpy import celparser
from celpy.celparser import CELParser
from lark.grammar import Rule
from lark.lexer import TerminalDef

__all__ = ["build_parser", "fingerprint", "install_parser", "load_parser", "table_document"]

_log = logging.getLogger(__name__)

_GRAMMAR_PATH = Path(celparser.__file__).with_name("cel.lark")

_OPTIONS: dict[str, Any] = {
    "parser": "lalr",
    "start": "expr",
    "maybe_placeholders": False,
    "priority": "invert",
}
"""cel-python's options for its parser (celpy.celparser.CELParser), less those given again at load: `debug`
changes only how the table is kept in memory (it is off here, so states are numbers JSON can hold)."""


def _runtime_options() -> dict[str, Any]:
    """The options that are code, not data: given to a built parser and again to a loaded one."""
    return {
        "g_regex_flags": re.MULTILINE,
        "lexer_callbacks": {"IDENT": CELParser.ambiguous_literals},
        "tree_class": lark.Tree,
        "propagate_positions": True,
    }


def fingerprint() -> str:
    """What a table depends on: the grammar, the options and the lark release line that serialised it."""
    minor = ".".join(lark.__version__.split(".")[:2])
    text = json.dumps([_GRAMMAR_PATH.read_text(), sorted(_OPTIONS.items()), minor])
    return hashlib.sha256(text.encode()).hexdigest()


def build_parser() -> lark.Lark:
    """The parser cel-python would build, with the table kept as numbered states."""
    return lark.Lark(_GRAMMAR_PATH.read_text(), **_OPTIONS, **_runtime_options())


def _encode(value: Any) -> Any:
    """JSON for lark's serialised form: tuples and dicts with non-string keys are tagged, so they come back."""
    if isinstance(value, dict):
        if all(isinstance(key, str) for key in value):
            return {key: _encode(item) for key, item in value.items()}
        return {"\u0000pairs": [[_encode(key), _encode(item)] for key, item in value.items()]}
    if isinstance(value, tuple):
        return {"\u0000tuple": [_encode(item) for item in value]}
    if isinstance(value, list):
        return [_encode(item) for item in value]
    if value is None or isinstance(value, str | int | float):
        return value
    raise TypeError(f"a parse table holds {type(value).__name__}, which JSON cannot")


def _decode(obj: dict[str, Any]) -> Any:
    if "\u0000pairs" in obj:
        return {(tuple(key) if isinstance(key, list) else key): item for key, item in obj["\u0000pairs"]}
    if "\u0000tuple" in obj:
        return tuple(obj["\u0000tuple"])
    return obj


def table_document(parser: lark.Lark) -> dict[str, Any]:
    """The table of a built parser as JSON-ready data, with its fingerprint."""
    data, memo = parser.memo_serialize([TerminalDef, Rule])
    code = {*_runtime_options(), "_plugins", "transformer"}
    data["options"] = {key: value for key, value in data["options"].items() if key not in code}
    return {"fingerprint": fingerprint(), "table": _encode({"data": data, "memo": memo})}


def load_parser(table: str, table_fingerprint: str) -> lark.Lark | None:
    """The parser of a table's JSON text; None when it was made for another grammar, options or lark."""
    if table_fingerprint != fingerprint():
        return None
    loaded: lark.Lark = lark.Lark.__new__(lark.Lark)._load(json.loads(table, object_hook=_decode), **_runtime_options())
    return loaded


def install_parser(table: tuple[str, str] | None = None) -> bool:
    """Give cel-python the parser of `table` ((JSON text, fingerprint); by default the shipped one) unless it has
    one; True when it was installed. Any failure to read the table leaves cel-python to build its parser."""
    if CELParser.CEL_PARSER is not None:
        return False
    try:
        if table is None:
            from engine.cluster.matching import cel_parser_table_data as shipped  # noqa: PLC0415 - 150 kB, if used

            table = (shipped.TABLE, shipped.FINGERPRINT)
        parser = load_parser(*table)
    except Exception as exc:  # lark validates with asserts too; a table that fails must only cost the build
        _log.warning("the shipped CEL parse table cannot be read (%s); building the parser", exc)
        return False
    if parser is None:
        _log.info("the shipped CEL parse table is for another lark or grammar; building the parser")
        return False
    CELParser.CEL_PARSER = parser
    return True
