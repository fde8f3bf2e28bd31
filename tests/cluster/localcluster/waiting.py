"""Poll-with-deadline helpers, so tests and the harness never sleep a guessed time.

``wait_for`` returns as soon as the condition holds and fails with a message that says what
was awaited and what was last seen, so a timeout explains itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class WaitTimeout(AssertionError):
    """A condition did not hold before its deadline (an AssertionError so pytest shows it)."""


def wait_for(
    predicate: Callable[[], T | None],
    timeout: float = 30.0,
    interval: float = 0.2,
    message: str = "condition",
) -> T:
    """Call ``predicate`` until it returns something truthy; return that value.

    Exceptions raised by the predicate count as "not yet" (an object may not exist yet), but
    the last one is quoted in the timeout error so a real bug is not hidden.
    """
    deadline = time.monotonic() + timeout
    last_value: object = None
    last_error: BaseException | None = None
    while True:
        try:
            value = predicate()
        except Exception as error:
            last_error = error
        else:
            if value:
                return value
            last_value = value
            last_error = None
        if time.monotonic() >= deadline:
            detail = (
                f"last error: {type(last_error).__name__}: {last_error}"
                if last_error is not None
                else f"last value: {last_value!r}"
            )
            raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for {message}; {detail}")
        time.sleep(interval)
