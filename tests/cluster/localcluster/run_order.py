"""A pytest plugin (pyproject's addopts: `-p localcluster.run_order`): unit tests marked
`long_running` (seeded simulations, the fail-open fuzz: 10-140 s each) are collected first.
Why: pytest-xdist hands each worker its share in collection order, so a long test collected
last ran alone at the end while the other worker idled (the unit run of stop 46's code:
521 s, its last ~150 s on the two fuzz tests; 409 s first). The e2e modules' order is
tests/e2e/conftest.py's (localcluster/workers.py plans it)."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Long-running unit tests first, each group in its collected order (a stable sort)."""
    del config  # the hook's signature
    items.sort(key=lambda item: item.get_closest_marker("long_running") is None)
