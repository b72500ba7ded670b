"""Compile-time checks of CEL expressions, as cel-go's parser limits and type checker apply them.

cel-python resolves names and functions only when it evaluates, so `invalid.expression` would be a runtime error
(no match) where cel-go refuses to compile it. This checker walks celpy's syntax tree with the declarations of
the placement environment: the one variable `managedCluster` (a `map(string, dyn)`), macro variables in their
scope, and the overloads of every function the environment provides. Undeclared names, unknown functions, calls
with an arity or receiver no overload accepts, and operators over types no overload accepts are issues, worded and
located as cel-go words them. Almost everything read from the cluster is `dyn`, which matches any overload, so an
expression cel-go accepts is accepted here. Nesting past cel-go's parser limits is an issue too, found before any
recursive walk, so a hostile expression can never exhaust the interpreter's stack.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import lark

from engine.cluster.matching.cel_decls import (
    BOOL,
    BYTES,
    DOUBLE,
    DYN,
    ERROR,
    INT,
    NULL,
    OVERLOADS,
    PARAMS,
    STRING,
    TYPE,
    TYPE_NAMES,
    UINT,
    VARIABLES,
    Type,
    format_type,
    join,
    list_type,
    map_type,
    substitute,
    unify,
)

__all__ = ["MAX_CODE_POINTS", "MAX_RECURSION", "check", "limits", "normalize"]

MAX_CODE_POINTS = 100_000
"""cel-go's default expression size limit, in code points."""
MAX_RECURSION = 250
"""cel-go's default parser recursion limit."""

_MAX_DEPTH = 1_200
"""Syntax tree levels past which an expression is refused (cel-go's visitor has its own depth limit too); the
walks over the tree recurse, and this keeps them well inside the interpreter's stack."""

_MACROS = {"all": 2, "exists": 2, "exists_one": 2, "filter": 2, "map": 2}
_OPERATORS = {
    "relation_lt": "_<_", "relation_le": "_<=_", "relation_gt": "_>_", "relation_ge": "_>=_",
    "relation_eq": "_==_", "relation_ne": "_!=_", "relation_in": "@in", "addition_add": "_+_",
    "addition_sub": "_-_", "multiplication_mul": "_*_", "multiplication_div": "_/_", "multiplication_mod": "_%_",
}  # fmt: skip
_SYMBOLS = {"@in": "in"}
_LITERALS = {
    "INT_LIT": INT, "UINT_LIT": UINT, "FLOAT_LIT": DOUBLE, "STRING_LIT": STRING, "MLSTRING_LIT": STRING,
    "BYTES_LIT": BYTES, "BOOL_LIT": BOOL, "NULL_LIT": NULL,
}  # fmt: skip


def _issue(text: str, line: int, column: int, message: str) -> str:
    """One issue as cel-go displays it: position, message, the source line and a caret under the column."""
    if line < 1:
        return f"ERROR: <input>:-1:0: {message}"
    source = text.splitlines()[line - 1] if text.splitlines() else ""
    return f"ERROR: <input>:{line}:{column}: {message}\n | {source}\n | {'.' * (column - 1)}^"


def limits(text: str, ast: lark.Tree[lark.Token]) -> str | None:
    """The first parser limit the expression exceeds, as an issue, else None. Iterative: any depth is safe."""
    size = len(text)
    if size > MAX_CODE_POINTS:
        return _issue(text, 0, 0, f"expression code point size exceeds limit: size: {size}, limit {MAX_CODE_POINTS}")
    pending: list[tuple[lark.Tree[lark.Token], int, int, int]] = [(ast, 0, 0, 0)]
    while pending:
        node, nesting, visits, depth = pending.pop()
        nesting += node.data == "expr"
        # cel-go's visitor steps over one-child wrappers: a level is an operator, a call, a selection, a literal
        visits += len(node.children) > 1 or node.data not in _WRAPPERS
        depth += 1
        if nesting > MAX_RECURSION:
            return _issue(text, 0, 0, f"expression recursion limit exceeded: {MAX_RECURSION}")
        if visits > MAX_RECURSION or depth > _MAX_DEPTH:
            return _issue(text, 0, 0, "max recursion depth exceeded")
        pending.extend((child, nesting, visits, depth) for child in node.children if isinstance(child, lark.Tree))
    return None


_WRAPPERS = frozenset(
    {"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary", "member"}
    | {"primary", "exprlist", "paren_expr"}
    | {"relation_lt", "relation_le", "relation_gt", "relation_ge", "relation_eq", "relation_ne", "relation_in"}
    | {"addition_add", "addition_sub", "multiplication_mul", "multiplication_div", "multiplication_mod"}
)


def normalize(ast: lark.Tree[lark.Token]) -> lark.Tree[lark.Token]:
    """The tree as cel-go's parser shapes it, in place: a chain of `||` (or `&&`) becomes a balanced tree, and a run
    of `!` (or `-`) keeps its parity only (`!!x` is `x`). Evaluation depth then stays logarithmic in a chain's length,
    as cel-go's does. Iterative: any depth is safe."""
    pending = [ast]
    while pending:
        node = pending.pop()
        if node.data in ("conditionalor", "conditionaland") and len(node.children) == 2:
            operands: list[Any] = []
            current: Any = node
            while isinstance(current, lark.Tree) and current.data == node.data and len(current.children) == 2:
                operands.append(current.children[1])
                current = current.children[0]
            operands.append(current)
            operands.reverse()
            node.children = _balanced(node.data, operands).children
            pending.extend(o for o in operands if isinstance(o, lark.Tree))
            continue
        if node.data == "unary" and len(node.children) == 2:
            operator, operand = node.children
            count = 1
            while (
                isinstance(operand, lark.Tree)
                and operand.data == "unary"
                and len(operand.children) == 2
                and operand.children[0].data == operator.data  # type: ignore[union-attr]
            ):
                count += 1
                operand = operand.children[1]
            node.children = [operator, operand] if count % 2 else [operand]
            if isinstance(operand, lark.Tree):
                pending.append(operand)
            continue
        pending.extend(child for child in node.children if isinstance(child, lark.Tree))
    return ast


def _balanced(rule: str, operands: list[Any]) -> lark.Tree[lark.Token]:
    """A balanced binary tree of `rule` nodes over the operands, in order."""
    if len(operands) == 1:
        only = operands[0]
        return only if isinstance(only, lark.Tree) else lark.Tree(rule, [only])
    middle = len(operands) // 2
    left, right = _balanced(rule, operands[:middle]), _balanced(rule, operands[middle:])
    return lark.Tree(rule, [left, right])


class _Checker:
    """One walk over a syntax tree; `issues` collects what cel-go would report, in source order."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.issues: list[tuple[int, int, str]] = []
        self.scopes: list[dict[str, Type]] = []

    # --- positions -----------------------------------------------------------------------------------------
    def _at(self, offset: int, message: str) -> Type:
        line = self.text.count("\n", 0, offset) + 1
        column = offset - (self.text.rfind("\n", 0, offset) + 1) + 1
        self.issues.append((line, column, message))
        return ERROR

    def _after(self, offset: int, char: str) -> int:
        """The offset of the next `char` at or after `offset` (an operator or bracket lark leaves out)."""
        found = self.text.find(char, offset)
        return found if found >= 0 else offset

    def _between(self, left: Any, right: Any, symbol: str) -> int:
        """The offset of the operator `symbol` between two operands (the one right before `right`)."""
        end = self._start(right)
        if end is not None:
            found = self.text.rfind(symbol, 0, end)
            if found >= 0:
                return found
        return self._after(self._end(left) or 0, symbol)

    @staticmethod
    def _start(node: Any) -> int | None:
        """Where a node starts; None when lark kept no position (celpy's literal tokens have none)."""
        if isinstance(node, lark.Token):
            return node.start_pos
        start = getattr(node.meta, "start_pos", None)
        if isinstance(start, int):
            return start
        tokens = [t.start_pos for t in node.scan_values(lambda v: isinstance(v, lark.Token)) if t.start_pos is not None]
        return min(tokens) if tokens else None

    @staticmethod
    def _end(node: Any) -> int | None:
        if isinstance(node, lark.Token):
            return node.end_pos
        end = getattr(node.meta, "end_pos", None)
        return end if isinstance(end, int) else None

    # --- resolution ----------------------------------------------------------------------------------------
    def _call(self, name: str, offset: int, member: bool, args: Sequence[Type]) -> Type:
        overloads = OVERLOADS.get(name)
        if overloads is None:
            return self._at(offset, f"undeclared reference to '{name}' (in container '')")
        if ERROR in args:
            return ERROR
        results = []
        for is_member, params, result in overloads:
            if is_member != member or len(params) != len(args):
                continue
            bound: dict[str, Type] = {}
            if all(unify(p, a, bound) for p, a in zip(params, args, strict=True)):
                results.append(substitute(result, bound))
        if not results:
            shown = ", ".join(format_type(a) for a in (args[1:] if member else args))
            signature = f"{format_type(args[0])}.({shown})" if member else f"({shown})"
            return self._at(offset, f"found no matching overload for '{name}' applied to '{signature}'")
        return results[0] if all(r == results[0] for r in results) else DYN

    def _resolve(self, name: str, offset: int) -> Type:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name in VARIABLES:
            return VARIABLES[name]
        if name in TYPE_NAMES:
            return TYPE
        return self._at(offset, f"undeclared reference to '{name}' (in container '')")

    # --- the walk ------------------------------------------------------------------------------------------
    def visit(self, node: Any) -> Type:
        """The type of `node`; issues are collected on the way."""
        if isinstance(node, lark.Token):
            return _LITERALS.get(node.type, DYN)
        method = getattr(self, f"_{node.data}", None)
        if method is not None:
            result: Type = method(node)
            return result
        if len(node.children) == 2 and node.data in ("relation", "addition", "multiplication"):
            return self._binary(node)
        if len(node.children) == 1:
            return self.visit(node.children[0])
        return DYN

    def _expr(self, node: Any) -> Type:
        if len(node.children) == 1:
            return self.visit(node.children[0])
        condition, left, right = node.children
        types = [self.visit(condition), self.visit(left), self.visit(right)]
        offset = self._between(condition, left, "?")
        return self._call("_?_:_", offset, False, types)

    def _logical(self, node: Any, name: str, symbol: str) -> Type:
        if len(node.children) == 1:
            return self.visit(node.children[0])
        left, right = node.children
        types = [self.visit(left), self.visit(right)]
        return self._call(name, self._between(left, right, symbol), False, types)

    def _conditionalor(self, node: Any) -> Type:
        return self._logical(node, "_||_", "||")

    def _conditionaland(self, node: Any) -> Type:
        return self._logical(node, "_&&_", "&&")

    def _binary(self, node: Any) -> Type:
        operator, right = node.children
        (left,) = operator.children
        types = [self.visit(left), self.visit(right)]
        name = _OPERATORS[operator.data]
        return self._call(name, self._between(left, right, _SYMBOLS.get(name, name.strip("_@"))), False, types)

    def _unary(self, node: Any) -> Type:
        if len(node.children) == 1:
            return self.visit(node.children[0])
        operator, operand = node.children
        operand_type = self.visit(operand)
        name = "!_" if operator.data == "unary_not" else "-_"
        return self._call(name, self._start(node) or 0, False, [operand_type])

    def _primary(self, node: Any) -> Type:
        return self.visit(node.children[0])

    def _paren_expr(self, node: Any) -> Type:
        return self.visit(node.children[0])

    def _literal(self, node: Any) -> Type:
        token = node.children[0]
        return _LITERALS.get(token.type, DYN)

    def _ident(self, node: Any) -> Type:
        token = node.children[0]
        return self._resolve(str(token), self._start(token) or 0)

    _dot_ident = _ident

    def _args(self, node: Any) -> list[Any]:
        lists = [c for c in node.children if isinstance(c, lark.Tree) and c.data == "exprlist"]
        return list(lists[0].children) if lists else []

    def _ident_arg(self, node: Any) -> Type:
        token = node.children[0]
        name, args = str(token), self._args(node)
        if name == "has" and len(args) == 1:
            return self._has(args[0])
        types = [self.visit(arg) for arg in args]
        return self._call(name, self._after(self._end(token) or 0, "("), False, types)

    _dot_ident_arg = _ident_arg

    def _has(self, arg: Any) -> Type:
        inner = _unwrap(arg)
        if not (isinstance(inner, lark.Tree) and inner.data == "member_dot"):
            return self._at(self._start(arg) or 0, "invalid argument to has() macro")
        target = self.visit(inner.children[0])
        self._select(target, inner)
        return BOOL

    def _member_dot(self, node: Any) -> Type:
        return self._select(self.visit(node.children[0]), node)

    def _select(self, target: Type, node: Any) -> Type:
        if target in (DYN, ERROR) or target in PARAMS:
            return target if target == ERROR else DYN
        if isinstance(target, tuple) and target[0] == "map":
            return target[2] if target[2] not in PARAMS else DYN
        offset = self._between(node.children[0], node.children[1], ".")
        return self._at(offset, f"type '{format_type(target)}' does not support field selection")

    def _member_index(self, node: Any) -> Type:
        target, index = node.children
        types = [self.visit(target), self.visit(index)]
        return self._call("_[_]", self._between(target, index, "["), False, types)

    def _member_object(self, node: Any) -> Type:
        """A message construction `Name{...}`: the environment declares no message types."""
        name_end = self._end(node.children[0]) or 0
        name = self.text[self._start(node) or 0 : name_end].strip()
        return self._at(self._after(name_end, "{"), f"undeclared reference to '{name}' (in container '')")

    def _member_dot_arg(self, node: Any) -> Type:
        target, token = node.children[0], node.children[1]
        name, args = str(token), self._args(node)
        offset = self._after(self._end(token) or 0, "(")
        if _MACROS.get(name) == len(args) or (name == "map" and len(args) == 3):
            return self._comprehension(name, target, args, offset)
        types = [self.visit(target), *(self.visit(arg) for arg in args)]
        return self._call(name, offset, True, types)

    def _comprehension(self, name: str, target: Any, args: list[Any], offset: int) -> Type:
        range_type = self.visit(target)
        variable = _unwrap(args[0])
        if not (isinstance(variable, lark.Tree) and variable.data == "ident"):
            return self._at(self._start(args[0]) or 0, "argument must be a simple name")
        if isinstance(range_type, tuple):
            element = range_type[1]
        elif range_type in (DYN, ERROR) or range_type in PARAMS:
            element = DYN
        else:
            message = (
                f"expression of type '{format_type(range_type)}' cannot be range of a comprehension "
                "(must be list, map, or dynamic)"
            )
            return self._at(self._start(target) or 0, message)
        element = DYN if element in PARAMS else element
        self.scopes.append({str(variable.children[0]): element})
        try:
            bodies = [self.visit(arg) for arg in args[1:]]
        finally:
            self.scopes.pop()
        if name in ("all", "exists", "exists_one", "filter") or len(args) == 3:
            self._call("_&&_", offset, False, [BOOL, bodies[0]])
        if name == "filter":
            return list_type(element)
        if name == "map":
            return list_type(bodies[-1] if bodies[-1] != ERROR else DYN)
        return BOOL

    def _list_lit(self, node: Any) -> Type:
        types = [self.visit(item) for item in self._args(node)]
        return list_type(join(types))

    def _map_lit(self, node: Any) -> Type:
        entries = [c for c in node.children if isinstance(c, lark.Tree) and c.data == "mapinits"]
        items = list(entries[0].children) if entries else []
        keys = [self.visit(item) for item in items[0::2]]
        values = [self.visit(item) for item in items[1::2]]
        return map_type(join(keys), join(values))


def _unwrap(node: Any) -> Any:
    """The node under a chain of one-child wrappers."""
    while isinstance(node, lark.Tree) and len(node.children) == 1 and node.data not in ("ident", "literal"):
        node = node.children[0]
    return node


def check(text: str, ast: lark.Tree[lark.Token]) -> list[str]:
    """The issues cel-go's checker reports for the expression, in source order (empty when it compiles)."""
    checker = _Checker(text)
    checker.visit(ast)
    return [_issue(text, line, column, message) for line, column, message in sorted(checker.issues)]
