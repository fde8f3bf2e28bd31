"""Which traffic a shadow request is: the labels acceptance is split by, and their bands.

Why: a config rarely fails everywhere at once, so every request carries three labels
(class, temperature band, length band) and the candidate's acceptance is kept per tuple.
The bands are chosen here once; everyone else only reads them. Bands: docs/internals.md.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from specdecode.domain.acceptance_moments import GroupEvidence
from specdecode.domain.prompts import CLASS_LABEL, ShadowRequest

UNLABELLED = "unlabelled"
OTHER = "other"
MAX_GROUPS = 12  # including `other`; api.status.MAX_TRAFFIC_GROUPS must equal it
# (upper edge, band): the first band whose edge the value does not exceed
TEMPERATURE_BANDS: tuple[tuple[float, str], ...] = ((0.0, "greedy"), (0.5, "low"))
TEMPERATURE_ABOVE = "high"
LENGTH_BANDS: tuple[tuple[float, str], ...] = ((128, "short"), (512, "medium"))
LENGTH_ABOVE = "long"
_SEPARATOR = "/"


@dataclass(frozen=True)
class TrafficGroup:
    """One label tuple; `key` is its wire and status form, "class/temperature/length"."""

    traffic_class: str
    temperature: str
    length: str

    @property
    def key(self) -> str:
        """ "class/temperature/length"."""
        return _SEPARATOR.join((self.traffic_class, self.temperature, self.length))


OTHER_GROUP = TrafficGroup(OTHER, OTHER, OTHER)


def _band(value: float, bands: tuple[tuple[float, str], ...], above: str) -> str:
    return next((name for edge, name in bands if value <= edge), above)


def temperature_band(temperature: float) -> str:
    """greedy, low or high."""
    return _band(temperature, TEMPERATURE_BANDS, TEMPERATURE_ABOVE)


def length_band(max_tokens: int) -> str:
    """short, medium or long (by the request's max_tokens)."""
    return _band(max_tokens, LENGTH_BANDS, LENGTH_ABOVE)


def group_of(request: ShadowRequest) -> TrafficGroup:
    """A request's labels (see the module docstring)."""
    traffic_class = request.traffic_class or request.workload or UNLABELLED
    return TrafficGroup(
        traffic_class, temperature_band(request.temperature), length_band(request.max_tokens)
    )


def group_keys(prompts: Sequence[ShadowRequest]) -> tuple[str, ...]:
    """Each prompt's group key, the set's smallest groups folded into `other` (bounded)."""
    keys = [group_of(request).key for request in prompts]
    counts = Counter(keys)
    if len(counts) <= MAX_GROUPS:
        return tuple(keys)
    ranked = sorted(counts, key=lambda key: (-counts[key], key))
    kept = set(ranked[: MAX_GROUPS - 1])
    return tuple(key if key in kept else OTHER_GROUP.key for key in keys)


def parse_key(key: str) -> TrafficGroup:
    """A group key back into its labels (ValueError if it is not one)."""
    parts = key.split(_SEPARATOR)
    if len(parts) != 3 or not all(CLASS_LABEL.fullmatch(part) for part in parts):
        raise ValueError(f"traffic group {key[:80]!r} is not class/temperature/length")
    return TrafficGroup(*parts)


def fold_groups(
    groups: Mapping[str, GroupEvidence], limit: int = MAX_GROUPS
) -> dict[str, GroupEvidence]:
    """At most `limit` groups: the largest by requests (then key) kept, the rest in other."""
    if len(groups) <= limit:
        return dict(groups)
    ranked = sorted(groups, key=lambda key: (key == OTHER_GROUP.key, -groups[key].requests, key))
    kept = {key: groups[key] for key in ranked[: limit - 1]}
    folded = GroupEvidence()
    for key in ranked[limit - 1 :]:
        folded = folded.plus(groups[key])
    kept[OTHER_GROUP.key] = folded
    return kept
