"""Per-rollout wake-up signals: how a watch event reaches the rollout's reconcile loop.

Each rollout has one reconcile loop (a kopf daemon) that sleeps until its next look is
due or until something it depends on changes: the rollout itself (spec, annotations such as
`specdecode.io/action`), one of its children or pods, or an HTTPRoute in its namespace.
The watch handlers call `wake`; the loop calls `wait`. A signal is level-triggered: any
number of events during a reconcile cause exactly one more reconcile afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib


class Wakeups:
    """The wake-up flags of every rollout this process reconciles."""

    def __init__(self) -> None:
        self._flags: dict[str, asyncio.Event] = {}
        self._followers: dict[str, str] = {}

    def follow(self, key: str, target: str) -> None:
        """Route wake-ups of `key` to `target`: a tuning's trial ("namespace/trial", the
        key its children are labelled with) wakes the tuning's loop."""
        self._followers[key] = target

    def unfollow(self, target: str) -> None:
        """Forget every key routed to `target` (its loop stopped)."""
        for key in [k for k, t in self._followers.items() if t == target]:
            del self._followers[key]

    def register(self, key: str) -> None:
        """Start tracking a rollout ("namespace/name"); set, so its first pass runs at once."""
        flag = self._flags.setdefault(key, asyncio.Event())
        flag.set()

    def unregister(self, key: str) -> None:
        """Stop tracking a rollout (deleted, or the loop stopped)."""
        self._flags.pop(key, None)

    def wake(self, key: str) -> bool:
        """Ask for a reconcile of `key` as soon as its loop is free; False if unknown."""
        flag = self._flags.get(self._followers.get(key, key))
        if flag is None:
            return False
        flag.set()
        return True

    def wake_namespace(self, namespace: str) -> int:
        """Wake every tracked rollout of a namespace (an HTTPRoute there changed)."""
        prefix = f"{namespace}/"
        keys = [key for key in self._flags if key.startswith(prefix)]
        for key in keys:
            self._flags[key].set()
        return len(keys)

    async def wait(self, key: str, seconds: float | None) -> bool:
        """Sleep until woken or `seconds` passed (None: until woken); True if woken.

        The flag is cleared on return, so events that arrive during the next reconcile
        set it again and are not lost.
        """
        flag = self._flags.setdefault(key, asyncio.Event())
        woken = True
        if not flag.is_set():
            woken = False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(flag.wait(), seconds)
                woken = True
        flag.clear()
        return woken
