"""The walk of one reconcile: how often it enters each reconciler module (issue 35 item 1).

Issue 35 asks that one reconcile enter each `specdecode.reconciler` module at most once
(observe, decide, act). This measures it on the restart test's scripted analyses
(`test_restart_every_look`): `sys.setprofile` sees every Python call of the event loop's
thread; an *entry* is a fresh call (not a coroutine resumed after an await: its frame sits
at its first RESUME) of a function of a reconciler module from code of another module.
Calls the reconciler hands to `asyncio.to_thread` run in worker threads and are not
seen; they are the adapters' (blocking API calls), not the reconciler's.

Each module may be entered at most once per reconcile (`CEILING` lists exceptions: none),
and the table is printed (`-s`) so a note can quote it.
"""

from __future__ import annotations

import dis
import functools
import sys
from collections import Counter
from collections.abc import Awaitable, Callable
from types import CodeType, FrameType
from typing import Any

import pytest
import test_restart_every_look as restart_test

from specdecode.reconciler.reconcile import reconcile

pytestmark = pytest.mark.unit

RECONCILER = "specdecode.reconciler."

# The most entries of a module in one reconcile, over the scripted analyses below (a
# module not listed: at most once). Empty: every module is entered at most once (the
# one-pass reconcile, issue 35 item 1; 2026-11-29 on main 321b5ce the busiest reconcile
# entered apply 14 times, load 9, ownership 8).
CEILING: dict[str, int] = {}


@functools.cache
def _first_resume(code: CodeType) -> int:
    """Where a fresh call of `code` starts (a resumed coroutine's frame is past it)."""
    return next(i.offset for i in dis.get_instructions(code) if i.opname == "RESUME")


class Walk:
    """Entries into reconciler modules, one Counter per reconcile."""

    def __init__(self) -> None:
        self.reconciles: list[Counter[str]] = []

    def _profile(self, frame: FrameType, event: str, _: Any) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith(RECONCILER) or frame.f_lasti != _first_resume(frame.f_code):
            return
        caller = frame.f_back
        if caller is None or caller.f_globals.get("__name__") != module:
            self.reconciles[-1][module.removeprefix(RECONCILER)] += 1

    def wrap(self, reconcile: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        """`reconcile`, profiled while it runs."""

        async def profiled(*args: Any, **kwargs: Any) -> Any:
            self.reconciles.append(Counter())
            sys.setprofile(self._profile)
            try:
                return await reconcile(*args, **kwargs)
            finally:
                sys.setprofile(None)

        return profiled


@pytest.mark.parametrize(
    "name", ["mirror", "owned-prompts", "adopted-gitops", "adopted-patch", "adopted-mirror"]
)
async def test_a_reconcile_enters_no_reconciler_module_more_often_than_measured(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    walk = Walk()
    monkeypatch.setattr(restart_test, "reconcile", walk.wrap(reconcile))
    await restart_test._drive(False, restart_test.ROLLOUTS[name], monkeypatch)
    assert len(walk.reconciles) == restart_test.STEPS
    assert any(walk.reconciles), "the profile saw no reconciler call: the walk is not measured"
    most: Counter[str] = Counter()
    for entries in walk.reconciles:
        for module, count in entries.items():
            most[module] = max(most[module], count)
    worst = max(walk.reconciles, key=lambda entries: sum(entries.values()))
    print(
        f"\n{name}: modules entered per reconcile (most over {len(walk.reconciles)}): "
        + ", ".join(f"{m} {n}" for m, n in sorted(most.items()))
        + f"; the busiest reconcile: {sum(worst.values())} entries into {len(worst)} modules"
    )
    over = {m: n for m, n in most.items() if n > CEILING.get(m, 1)}
    assert not over, f"the walk grew: {over} (ceiling {CEILING})"
