"""Kubernetes `$(VAR)` expansion for env values, command and args.

Semantics follow the API documentation: `$(NAME)` is replaced by the variable's value when it
is defined, an undefined reference stays literally `$(NAME)`, `$$` is an escaped `$`, and an
unterminated `$(` or a `$` before any other character is kept as written.
"""

from __future__ import annotations

from collections.abc import Mapping


def expand(text: str, variables: Mapping[str, str]) -> str:
    """Expand `$(NAME)` references in `text` from `variables`, kubelet-style."""
    out: list[str] = []
    i = 0
    length = len(text)
    while i < length:
        char = text[i]
        if char != "$" or i + 1 >= length:
            out.append(char)
            i += 1
            continue
        following = text[i + 1]
        if following == "$":
            out.append("$")
            i += 2
        elif following == "(":
            close = text.find(")", i + 2)
            if close < 0:
                out.append("$(")
                i += 2
                continue
            name = text[i + 2 : close]
            out.append(variables.get(name, f"$({name})"))
            i = close + 1
        else:
            out.append("$" + following)
            i += 2
    return "".join(out)


def expand_all(items: list[str], variables: Mapping[str, str]) -> list[str]:
    """Expand every element of a command or args list."""
    return [expand(item, variables) for item in items]
