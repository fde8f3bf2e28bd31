"""Does an API server refusal (kubectl's stderr) name a given field?

The e2e invalid-input test needs more than "the field's last segment appears somewhere":
leaves such as `name`, `model` or `type` occur in almost any error. The API server prints
each field error as `<path>: <reason>` (`spec.model: Required value`), joined as a list or
a `[a, b]` aggregate, and strict decoding as `unknown field "<path>"`. A CEL rule placed on
a parent object (or the root) reports the parent's path with our own message, which then
has to name the field itself.
"""

from __future__ import annotations

import re

# Characters that continue a field path leftwards: a match must not be the tail of a longer
# path. ("[" may precede a path: kubectl prints several errors as "[a: x, b: y]".)
_PATH_CHARS = r"[A-Za-z0-9_.\-\]]"


def path_is_named(stderr: str, path: str) -> bool:
    """`path` occurs as a whole field path, followed by `:` (a field error) or `"` (strict
    decoding's unknown field), not as part of a longer path."""
    pattern = rf"(?<!{_PATH_CHARS}){re.escape(path)}(?=[:\"])"
    return re.search(pattern, stderr) is not None


def parent_paths(path: str) -> list[str]:
    """`spec.a.b[0].c` -> `spec.a.b[0]`, `spec.a.b`, `spec.a`, `spec` (nearest first)."""
    parents: list[str] = []
    while True:
        cut = max(path.rfind("."), path.rfind("["))
        if cut <= 0:
            return parents
        path = path[:cut]
        parents.append(path)


def leaf_name(path: str) -> str:
    """The last name in a path, without indices: `spec.stages[0]` -> `stages`."""
    return re.sub(r"\[\d+\]", "", path).rsplit(".", 1)[-1]


def names_field(stderr: str, field: str, server_message: str | None = None) -> bool:
    """The refusal names `field`: by its own path; or, for a CEL rule on a parent object,
    by a parent's path with `server_message` naming the field's last segment; or, for a
    rule on the root (whose path the API server prints as `<nil>`), by a `server_message`
    that spells the whole path.

    When `server_message` is given it must appear in any case: the refusal is ours.
    """
    if server_message is not None and server_message not in stderr:
        return False
    if path_is_named(stderr, field):
        return True
    if server_message is None:
        return False
    if field in server_message:
        return True
    return leaf_name(field) in server_message and any(
        path_is_named(stderr, parent) for parent in parent_paths(field)
    )
