"""Every module of operator/ says in a docstring what it owns and why, briefly.

House style: a module docstring of at most `MAX_MODULE_DOCSTRING_LINES` lines, and a
docstring on every method of a `typing.Protocol` (an interface says why it exists, since no
implementation beside it does). The longer reasoning lives in docs/internals.md and
measured figures in docs/measured.md, where they do not go stale inside the code.
`asyncio.Protocol` subclasses are classes, not interfaces: they are not checked.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]
OPERATOR = REPO / "operator"
MAX_MODULE_DOCSTRING_LINES = 12


def module_docstring_problems(source: str) -> list[str]:
    """What is wrong with a module's own docstring: missing, or longer than allowed."""
    docstring = ast.get_docstring(ast.parse(source))
    if not docstring or not docstring.strip():
        return ["no module docstring"]
    lines = len(docstring.strip().splitlines())
    if lines > MAX_MODULE_DOCSTRING_LINES:
        return [f"module docstring of {lines} lines (at most {MAX_MODULE_DOCSTRING_LINES})"]
    return []


def _typing_protocol_names(tree: ast.Module) -> set[str]:
    """The names under which this module can spell typing's Protocol as a bare name."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("typing", "typing_extensions"):
            names.update(a.asname or a.name for a in node.names if a.name == "Protocol")
    return names


def _is_typing_protocol(base: ast.expr, bare_names: set[str]) -> bool:
    if isinstance(base, ast.Subscript):  # Protocol[T]
        base = base.value
    if isinstance(base, ast.Name):
        return base.id in bare_names
    return (
        isinstance(base, ast.Attribute)
        and base.attr == "Protocol"
        and isinstance(base.value, ast.Name)
        and base.value.id in ("typing", "typing_extensions")
    )


def protocol_method_problems(source: str) -> list[str]:
    """Every method of a typing.Protocol class that has no docstring, as `Class.method`."""
    tree = ast.parse(source)
    bare_names = _typing_protocol_names(tree)
    problems: list[str] = []
    for cls in ast.walk(tree):
        if not isinstance(cls, ast.ClassDef):
            continue
        if not any(_is_typing_protocol(base, bare_names) for base in cls.bases):
            continue
        for method in cls.body:
            if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and not (
                ast.get_docstring(method)
            ):
                problems.append(f"{cls.name}.{method.name} has no docstring")
    return problems


def checked_modules() -> list[Path]:
    """Every module of operator/, none skipped."""
    return sorted(OPERATOR.rglob("*.py"))


def test_modules_are_found() -> None:
    modules = checked_modules()
    assert len(modules) > 100, modules  # a moved tree must not make the checks vacuous
    assert any(p.name == "protocol.py" for p in modules)


def test_every_module_docstring_is_present_and_short() -> None:
    problems = [
        f"{path.relative_to(REPO)}: {problem}"
        for path in checked_modules()
        for problem in module_docstring_problems(path.read_text())
    ]
    assert not problems, "\n".join(problems)


def test_every_protocol_method_has_a_docstring() -> None:
    problems = [
        f"{path.relative_to(REPO)}: {problem}"
        for path in checked_modules()
        for problem in protocol_method_problems(path.read_text())
    ]
    assert not problems, "\n".join(problems)


# Controls: the checks find what they are for, and leave alone what they are not for.

SHORT = '"""One line.\n\nWhy, in a few more.\n"""\n'


def test_control_a_long_or_missing_module_docstring_is_found() -> None:
    body = "\n".join(f"line {i}" for i in range(MAX_MODULE_DOCSTRING_LINES))
    assert module_docstring_problems(f'"""Summary.\n{body}\n"""\n') == [
        "module docstring of 13 lines (at most 12)"
    ]
    assert module_docstring_problems("import os\n") == ["no module docstring"]
    assert module_docstring_problems(SHORT) == []


def test_control_a_protocol_method_without_docstring_is_found() -> None:
    source = SHORT + (
        "from typing import Protocol\n"
        "import typing\n"
        "import asyncio\n"
        "class Source(Protocol):\n"
        '    def read(self) -> int:\n        """Why."""\n'
        "    def write(self) -> None: ...\n"
        "class Generic(typing.Protocol[int]):\n"
        "    def get(self) -> int: ...\n"
        "class Wire(asyncio.Protocol):\n"
        "    def data_received(self, data: bytes) -> None: ...\n"
    )
    assert protocol_method_problems(source) == [
        "Source.write has no docstring",
        "Generic.get has no docstring",
    ]
