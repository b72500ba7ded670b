"""The shipped CEL parse table: current, written the same by every build, and parsing exactly as cel-python's own
parser does."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from importlib import resources

import lark
import pytest
from celpy.celparser import CELParser

from engine.cluster.matching.cel_env import compile_expression
from engine.cluster.matching.cel_parser_table import (
    TABLE_FILE,
    build_parser,
    fingerprint,
    install_parser,
    load_parser,
    shipped_table,
    table_text,
)

SHIPPED_TABLE, SHIPPED_FINGERPRINT = shipped_table()

# every construct of the grammar, and inputs it refuses at each stage (lexer, parser, end of input)
PARSED = [
    'managedCluster.metadata.labels["tier"] == "gold"',
    "a ? b : c ? d : e",
    "a || b && !c || !!d",
    "1 < 2 && 2 <= 3 && 3 > 2 && 3 >= 3 && 1 == 1 && 1 != 2 && 'a' in ['a']",
    "1 + 2 - 3 * 4 / 5 % 6",
    "-1 - -x",
    "0x1F + 0xaB + 7u + 0x1Fu + 12U",
    "1.5 + .5 + 1. + 1e3 + 2.5E-4 + -3e+2",
    "\"dq\\n\\t\\\"\" + 'sq\\'' + r\"raw\\d\" + R'raw'",
    "'\\x41\\101\\u00e9\\U0001F600'",
    '"""multi\nline "quoted" """ + \'\'\'also\r\nmulti\'\'\'',
    "b'bytes' + B\"BYTES\" + b'''multi'''",
    "true && false || null == null",
    "a.b.c(1, 'two', [3])[0].d()",
    ".top.level && .f() && .g(1, 2)",
    "f() + g(1) + h(1, 2, 3)",
    "google.protobuf.Timestamp{seconds: 1, nanos: 2} == pkg.Msg{}",
    "[] + [1] + [1, 2, 3]",
    "{} == {'a': 1, 2: [3], true: {'x': null}}",
    "managedCluster.status.clusterClaims.exists(c, c.name == 'k' && semver(c.value).isGreaterThan(semver('1.28.0')))",
    "xs.all(x, x > 0) && xs.exists_one(x, x == 1) && xs.map(x, x * 2).filter(y, y > 2).size() > 0",
    "has(a.b) && (((1)))",
    "a // a comment\n  && b",
    "true_ident && falsey && nullable && inside",
    "  \t\n\f\r 1  ",
]

REFUSED = [
    *("", "1 +", "(1", "[1, 2", "{'a' 1}", "a.", "1 ? 2", "@", "a #", "'unterminated"),
    *("1 2", "a.b(,)", "1 in", "0XaB", "1 + 0XaB"),
]


@pytest.fixture(scope="module", autouse=True)
def _environment_made() -> None:
    """cel-python's environment is made once per process, with the parser there is then: made before these tests
    set the parser aside, so what they restore is a parser, and later tests in the process can compile."""
    compile_expression("1 == 1")


@pytest.fixture(scope="module")
def parsers() -> Iterator[tuple[lark.Lark, lark.Lark]]:
    """(the shipped table's parser, the parser cel-python builds itself)."""
    loaded = load_parser(SHIPPED_TABLE, SHIPPED_FINGERPRINT)
    assert loaded is not None, "the shipped table is stale: run scripts/cel_parser_table.py"
    installed = CELParser.CEL_PARSER
    CELParser.CEL_PARSER = None
    try:
        CELParser()
        own = CELParser.CEL_PARSER
    finally:
        CELParser.CEL_PARSER = installed
    assert own is not None
    yield loaded, own


def _positions(tree: lark.Tree[lark.Token]) -> list[tuple[object, ...]]:
    nodes = [(n.data, n.meta.line, n.meta.column, n.meta.end_line, n.meta.end_column) for n in tree.iter_subtrees()]
    tokens = [(t.type, t.value, t.start_pos, t.line, t.column, t.end_pos) for t in tree.scan_values(lambda _: True)]
    return nodes + tokens


def test_the_shipped_table_is_for_the_installed_grammar_and_lark() -> None:
    assert fingerprint() == SHIPPED_FINGERPRINT, "the grammar, options or lark changed: run scripts/cel_parser_table.py"


def test_regenerating_the_table_writes_the_shipped_bytes() -> None:
    shipped = resources.files("engine.cluster.matching").joinpath(TABLE_FILE).read_bytes()
    assert table_text(build_parser()).encode("ascii") == shipped, "run scripts/cel_parser_table.py"


def test_builds_with_other_hash_seeds_write_the_same_bytes() -> None:
    """Lark orders sets of its objects by hash and identity: the canonical numbering must undo that."""
    probe = (
        "import sys\n"
        "from engine.cluster.matching.cel_parser_table import build_parser, table_text\n"
        "sys.stdout.write(table_text(build_parser()))\n"
    )
    texts = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env)
        texts.add(done.stdout)
    assert texts == {table_text(build_parser())}


@pytest.mark.parametrize("text", PARSED)
def test_the_table_parses_as_cel_python_does(parsers: tuple[lark.Lark, lark.Lark], text: str) -> None:
    loaded, own = parsers
    tree, expected = loaded.parse(text), own.parse(text)
    assert tree == expected
    assert _positions(tree) == _positions(expected)


@pytest.mark.parametrize("text", REFUSED)
def test_the_table_refuses_what_cel_python_refuses(parsers: tuple[lark.Lark, lark.Lark], text: str) -> None:
    loaded, own = parsers
    errors = []
    for parser in (loaded, own):
        with pytest.raises(lark.exceptions.UnexpectedInput) as caught:
            parser.parse(text)
        errors.append((type(caught.value), caught.value.line, caught.value.column, caught.value.get_context(text)))
    assert errors[0] == errors[1]


@pytest.mark.parametrize(
    ("table", "why"),
    [
        (("not json", fingerprint()), "unreadable"),
        ((SHIPPED_TABLE, "0" * 64), "another lark or grammar"),
        (('{"data": {}, "memo": {}}', fingerprint()), "truncated"),
        (("[]", fingerprint()), "not a table"),
    ],
)
def test_a_table_that_cannot_serve_leaves_cel_python_to_build(
    monkeypatch: pytest.MonkeyPatch, table: tuple[str, str], why: str
) -> None:
    monkeypatch.setattr(CELParser, "CEL_PARSER", None)
    assert install_parser(table) is False, why
    assert CELParser.CEL_PARSER is None


def test_a_parser_cel_python_already_has_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    sentinel = object()
    monkeypatch.setattr(CELParser, "CEL_PARSER", sentinel)
    assert install_parser() is False
    assert CELParser.CEL_PARSER is sentinel


def test_the_first_compile_loads_the_table_and_builds_nothing() -> None:
    """Building cel-python's parser takes about 0.1 s: importing builds nothing, and the first compile loads the
    shipped table instead of building (a built parser would have been made from the grammar's text)."""
    probe = (
        "import lark, celpy.celparser as parser, engine.registry, engine.cluster.matching.cel_env as env\n"
        "built = []\n"
        "original = lark.Lark.__init__\n"
        "lark.Lark.__init__ = lambda self, *a, **k: built.append(1) or original(self, *a, **k)\n"
        "assert parser.CELParser.CEL_PARSER is None, 'built at import'\n"
        "assert env.compile_expression('1 == 1').text == '1 == 1'\n"
        "assert parser.CELParser.CEL_PARSER is not None\n"
        "assert not built, 'the parser was built'\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_expressions_compile_with_the_loaded_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(CELParser, "CEL_PARSER", None)
    assert install_parser() is True
    loaded = CELParser.CEL_PARSER
    compiled = compile_expression("managedCluster.metadata.name.startsWith('loaded') || 1 == 2")
    assert compiled.reads == (("metadata", "name"),)
    assert CELParser.CEL_PARSER is loaded, "compiled with the table's parser, none built"
