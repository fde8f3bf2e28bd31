"""What one vLLM release's SpeculativeConfig knows: fields, `method` and enum values.

Runs before the pydantic dataclass (which carries every field of every release) so the
per-release differences live in one table (releases.py), not in copies of the class:
- a key the release does not have is dropped silently up to 0.15 (pydantic dataclass
  default) and refused from 0.16 (`extra="forbid"`: "Unexpected keyword argument");
- a `method` or enum value the release's Literal lacks is refused ("Input should be ...").
Refusals are rendered like pydantic's ValidationError, all errors at once as pydantic does.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from specdecode_sim.releases import FIELD_VALUES, MTP_ALIASES, Release


def _choices(values: tuple[str, ...]) -> str:
    quoted = [f"'{value}'" for value in values]
    if len(quoted) == 1:
        return quoted[0]
    return ", ".join(quoted[:-1]) + " or " + quoted[-1]


def _error(key: str, message: str, kind: str, value: Any) -> str:
    return (
        f"{key}\n  {message} [type={kind}, input_value={value!r}, "
        f"input_type={type(value).__name__}]"
    )


def _literal_error(release: Release, key: str, value: Any) -> str | None:
    if key == "method":
        allowed = (*release.methods(), *MTP_ALIASES)
    elif key in FIELD_VALUES:
        allowed = release.values_of(key)
    else:
        return None
    if value is None or value in allowed:
        return None
    return _error(key, f"Input should be {_choices(allowed)}", "literal_error", value)


def check_release_fields(
    raw: Mapping[str, Any], release: Release, known_fields: Collection[str]
) -> tuple[dict[str, Any], list[str], str | None]:
    """(keys kept, keys dropped silently, rendered refusal or None) for `release`."""
    kept: dict[str, Any] = {}
    dropped: list[str] = []
    errors: list[str] = []
    for key, value in raw.items():
        if key not in known_fields or not release.has_field(key):
            if release.rejects_unknown_keys:
                errors.append(
                    _error(key, "Unexpected keyword argument", "unexpected_keyword_argument", value)
                )
            else:
                dropped.append(key)
            continue
        literal = _literal_error(release, key, value)
        if literal is not None:
            errors.append(literal)
        kept[key] = value
    if not errors:
        return kept, dropped, None
    count = f"{len(errors)} validation error{'s' if len(errors) > 1 else ''}"
    rendered = "\n".join(errors)
    return (
        kept,
        dropped,
        f"pydantic_core._pydantic_core.ValidationError: {count} for SpeculativeConfig\n{rendered}",
    )
