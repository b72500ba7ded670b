"""cel-python's CEL parser from a parse table shipped with the package, instead of one built at first use.

Lark builds the LALR table of the CEL grammar in about 0.1 s, and every process paid it with its first expression:
in a cold start, inside the first batch. The table is plain data, so it ships as a JSON package data file,
`cel_parser_table.json` (written by `scripts/cel_parser_table.py`; Lark's own cache would be a pickle), and is used
only while its fingerprint (cel-python's grammar, the parser options, lark's minor version) matches what is
installed; otherwise the parser is built as before. Lark numbers tokens and states in the order of sets of its
own objects, which changes from one build to the next, so the file is written in a canonical numbering
(`table_text`): regenerating it gives the same bytes. The tests compare the loaded parser with cel-python's own
on every construct of the grammar.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import lark
from celpy import celparser
from celpy.celparser import CELParser
from lark.grammar import Rule
from lark.lexer import TerminalDef

__all__ = [
    "TABLE_FILE",
    "build_parser",
    "fingerprint",
    "install_parser",
    "load_parser",
    "shipped_table",
    "table_document",
    "table_text",
]

_log = logging.getLogger(__name__)

_GRAMMAR_PATH = Path(celparser.__file__).with_name("cel.lark")

TABLE_FILE = "cel_parser_table.json"
"""The shipped table: package data beside this module."""

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


def _canonical(table: dict[str, Any]) -> dict[str, Any]:
    """Lark's serialised parse table renumbered so that equal automata give equal data: tokens by name, states
    in the order a breadth-first walk from the start states meets them, following tokens by name."""
    names = table["tokens"]
    token_ids = {name: number for number, name in enumerate(sorted(names.values()))}
    states: dict[int, dict[int, tuple[int, Any]]] = table["states"]
    order: dict[int, int] = {}
    queue = [table["start_states"][start] for start in sorted(table["start_states"])]
    while queue:
        state = queue.pop(0)
        if state in order:
            continue
        order[state] = len(order)
        for _, (action, arg) in sorted((names[token], step) for token, step in states[state].items()):
            if action == 0 and arg not in order:  # a shift (or goto) names the next state
                queue.append(arg)
    if len(order) != len(states):
        raise ValueError(f"{len(states) - len(order)} states of the parse table cannot be reached from a start")
    return {
        "tokens": {number: name for name, number in token_ids.items()},
        "states": {
            order[state]: dict(
                sorted(
                    (token_ids[names[token]], (action, order[arg] if action == 0 else arg))
                    for token, (action, arg) in actions.items()
                )
            )
            for state, actions in sorted(states.items(), key=lambda item: order[item[0]])
        },
        "start_states": {start: order[state] for start, state in sorted(table["start_states"].items())},
        "end_states": {end: order[state] for end, state in sorted(table["end_states"].items())},
    }


def table_document(parser: lark.Lark) -> dict[str, Any]:
    """The table of a built parser as JSON-ready data in its canonical numbering, with its fingerprint."""
    data, memo = parser.memo_serialize([TerminalDef, Rule])
    code = {*_runtime_options(), "_plugins", "transformer"}
    data["options"] = {key: value for key, value in data["options"].items() if key not in code}
    data["parser"]["parser"] = _canonical(data["parser"]["parser"])
    return {"fingerprint": fingerprint(), "table": _encode({"data": data, "memo": memo})}


def table_text(parser: lark.Lark) -> str:
    """The text of the shipped file for a built parser: the same bytes for every build of one grammar."""
    return json.dumps(table_document(parser), sort_keys=True, separators=(",", ":"), ensure_ascii=True) + "\n"


def shipped_table() -> tuple[Any, str]:
    """(the shipped table, read, and its fingerprint), from the package data file."""
    text = resources.files("engine.cluster.matching").joinpath(TABLE_FILE).read_text(encoding="utf-8")
    document = json.loads(text, object_hook=_decode)
    return document["table"], str(document["fingerprint"])


def load_parser(table: str | Mapping[str, Any], table_fingerprint: str) -> lark.Lark | None:
    """The parser of a table (its JSON text, or as `shipped_table` reads it); None when it was made for another
    grammar, options or lark."""
    if table_fingerprint != fingerprint():
        return None
    data = json.loads(table, object_hook=_decode) if isinstance(table, str) else table
    loaded: lark.Lark = lark.Lark.__new__(lark.Lark)._load(data, **_runtime_options())
    return loaded


def install_parser(table: tuple[str | Mapping[str, Any], str] | None = None) -> bool:
    """Give cel-python the parser of `table` ((JSON text, fingerprint); by default the shipped one) unless it has
    one; True when it was installed. Any failure to read the table leaves cel-python to build its parser."""
    if CELParser.CEL_PARSER is not None:
        return False
    try:
        if table is None:
            table = shipped_table()
        parser = load_parser(*table)
    except Exception as exc:  # lark validates with asserts too; a table that fails must only cost the build
        _log.warning("the shipped CEL parse table cannot be read (%s); building the parser", exc)
        return False
    if parser is None:
        _log.info("the shipped CEL parse table is for another lark or grammar; building the parser")
        return False
    CELParser.CEL_PARSER = parser
    return True
