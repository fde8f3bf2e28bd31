"""Just enough Kubernetes resource-quantity parsing for `resourceFieldRef` env vars."""

from __future__ import annotations

import math
from decimal import Decimal

_SUFFIXES: dict[str, Decimal] = {
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}


def parse_quantity(text: str | int | float) -> Decimal:
    """Parse "500m", "2Gi", "1e3" or a bare number into a Decimal."""
    raw = str(text).strip()
    for suffix in sorted(_SUFFIXES, key=len, reverse=True):
        if raw.endswith(suffix) and not raw.endswith("e" + suffix):
            return Decimal(raw[: -len(suffix)]) * _SUFFIXES[suffix]
    return Decimal(raw)


def divide_ceil(value: str | int | float, divisor: str | int | float | None) -> str:
    """Value divided by divisor, rounded up, as kubelet renders resourceFieldRef env vars."""
    quotient = parse_quantity(value) / parse_quantity(divisor or "1")
    return str(math.ceil(quotient))
