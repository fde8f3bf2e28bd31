"""A pytest-xdist scheduler that keeps each planned group whole on one worker.

Why not ``--dist loadgroup`` with ``xdist_group`` marks: with pytest 9.2 it silently stops
grouping (pytest-xdist issue 1386: xdist 3.8 rewrites ``item._nodeid``, which pytest no
longer reads), and the tests then spread as if unmarked. This is ``--dist loadscope`` with
the scope of a test being its module's group (localcluster/workers.py): a module stays
whole (its module-scoped analysis window is set up once), and the real vLLM modules share
one worker, one after the other. Loaded explicitly, ``-p localcluster.xdist_groups`` (see
the Makefile's E2E_ARGS); it takes over ``--dist loadscope`` only then.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

from localcluster import workers


def scope_of(nodeid: str) -> str:
    """The planned group of a test id: ``tests/e2e/test_x.py::test_y`` -> its module's."""
    return workers.group_of(PurePosixPath(nodeid.split("::", 1)[0]).stem)


class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]  # xdist has no types
    """``loadscope`` whose scopes are the planned groups (in collection order with
    ``--no-loadscope-reorder``: tests/e2e/conftest.py sorts them longest first)."""

    def _split_scope(self, nodeid: str) -> str:
        return scope_of(nodeid)


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> GroupScheduling | None:
    """Our scheduler for ``--dist loadscope``; any other mode is xdist's own."""
    if config.getvalue("dist") != "loadscope":
        return None
    return GroupScheduling(config, log)
