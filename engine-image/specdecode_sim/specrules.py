"""Post-init rules of the fields added after 0.11: synthetic acceptance (0.20+) and the
per-batch-size speculation schedule (0.24+), with vLLM's messages (tests/data/
speculative-versions.yaml holds the fragments the tests compare)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise


def check_synthetic(
    method: str | None,
    rates: Sequence[float] | None,
    length: float | None,
    num_speculative_tokens: int,
) -> None:
    """`rejection_sample_method: synthetic` takes exactly one of per-position acceptance
    rates (non-increasing, one per drafted position) or a mean acceptance length."""
    given = (rates is not None) + (length is not None)
    if given and method != "synthetic":
        raise ValueError(
            "synthetic_acceptance_rates and synthetic_acceptance_length are only valid "
            "with rejection_sample_method='synthetic'"
        )
    if method != "synthetic" or not given:
        return  # 0.19's `synthetic` used another field (not modelled): default acceptance
    if given != 1:
        raise ValueError(
            "rejection_sample_method='synthetic' requires exactly one of "
            "synthetic_acceptance_rates or synthetic_acceptance_length"
        )
    k = num_speculative_tokens
    if rates is not None:
        if len(rates) != k:
            raise ValueError(
                f"synthetic_acceptance_rates must have length {k} (num_speculative_tokens), "
                f"got {len(rates)}"
            )
        if any(not 0.0 <= rate <= 1.0 for rate in rates):
            raise ValueError(f"synthetic_acceptance_rates must be in [0, 1], got {list(rates)}")
        if any(later > earlier for earlier, later in pairwise(rates)):
            raise ValueError(
                f"synthetic_acceptance_rates must be non-increasing, got {list(rates)}"
            )
    elif length is not None and not 1.0 <= length <= k + 1:
        raise ValueError(f"synthetic_acceptance_length must be in [1, {k + 1}], got {length}")


def check_schedule(
    ranges: Sequence[tuple[int, int, int]], num_speculative_tokens: int
) -> list[tuple[int, int, int]]:
    """Sorted ranges with k capped at num_speculative_tokens, or ValueError: each start
    <= end, the first starting at 1, no overlap (gaps are allowed)."""
    ordered = sorted((tuple(entry) for entry in ranges), key=lambda entry: entry[0])
    for start, end, _ in ordered:
        if start > end:
            raise ValueError(f"Batch-size range start must be <= end, got [{start}, {end}]")
    if ordered and ordered[0][0] != 1:
        raise ValueError(f"The first batch-size range must start at 1, got {ordered[0][0]}")
    for (_, end, _), (start, _, _) in pairwise(ordered):
        if start <= end:
            raise ValueError("Batch-size ranges must be non-overlapping and sorted.")
    return [(start, end, min(k, num_speculative_tokens)) for start, end, k in ordered]
