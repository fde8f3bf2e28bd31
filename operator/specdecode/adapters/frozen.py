"""Deeply immutable copies of what observe read: a snapshot no decision can change.

Why: a reconcile decides on one snapshot (`reconciler.observe`); a decision that changed a
list or a model inside it would change what the apply (or a test) sees after it. `frozen`
copies a value all the way down: lists and dicts become `FrozenList` and `FrozenDict`
(still a list and a dict to pydantic's serializer, plain again when copied), sets
frozensets; a frozen pydantic model or dataclass (the API's and the domain's are) is copied
with its fields frozen. A mutable model or dataclass, or an unknown type, refuses.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from datetime import date, datetime, time, timedelta
from enum import Enum
from typing import Any, NoReturn, TypeVar

from pydantic import BaseModel

T = TypeVar("T")
_ATOMS = (str, int, float, bool, bytes, type(None), datetime, date, time, timedelta, Enum)
_PLAIN_ATOMS = frozenset({str, int, float, bool, type(None), datetime})  # the most met, fast


class FrozenError(TypeError):
    """A write into a frozen value (a snapshot's part)."""


def _refuse(self: object, *args: Any, **kwargs: Any) -> NoReturn:
    raise FrozenError(f"a {type(self).__name__} of a snapshot cannot be changed")


class FrozenList(list[Any]):
    """A list that refuses every write; its copies are plain lists."""

    __slots__ = ()
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return [copy.deepcopy(item, memo) for item in self]

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))


class FrozenDict(dict[Any, Any]):
    """A dict that refuses every write; its copies are plain dicts."""

    __slots__ = ()
    pop = popitem = clear = update = setdefault = _refuse
    __setitem__ = __delitem__ = __ior__ = _refuse

    def __copy__(self) -> dict[Any, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[Any, Any]:
        return {copy.deepcopy(k, memo): copy.deepcopy(v, memo) for k, v in self.items()}

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self),))


def frozen(value: T) -> T:
    """A deeply immutable copy of `value` (an atom as it is); `TypeError` for a mutable
    dataclass or a type it does not know, so nothing mutable slips into a snapshot."""
    result: Any
    if type(value) in _PLAIN_ATOMS or isinstance(value, _ATOMS):
        return value
    if isinstance(value, BaseModel):
        return _frozen_model(value)  # type: ignore[return-value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if not type(value).__dataclass_params__.frozen:  # type: ignore[attr-defined]
            raise TypeError(f"{type(value).__name__} is a mutable dataclass: make it frozen")
        result = object.__new__(type(value))
        for field in dataclasses.fields(value):
            object.__setattr__(result, field.name, frozen(getattr(value, field.name)))
        return result  # type: ignore[no-any-return]
    if isinstance(value, list):
        return FrozenList(frozen(item) for item in value)  # type: ignore[return-value]
    if isinstance(value, tuple):
        items = [frozen(item) for item in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    if isinstance(value, frozenset | set):
        return frozenset(frozen(item) for item in value)  # type: ignore[return-value]
    if isinstance(value, Mapping):
        return FrozenDict({frozen(k): frozen(v) for k, v in value.items()})  # type: ignore[return-value]
    raise TypeError(f"cannot freeze a {type(value).__name__}")


def _frozen_model(value: BaseModel) -> BaseModel:
    """A copy of a frozen pydantic model (the API's are) with its fields frozen too."""
    if not type(value).model_config.get("frozen"):
        raise TypeError(f"{type(value).__name__} is a mutable model: make it frozen")
    result = copy.copy(value)
    fields = {name: frozen(item) for name, item in value.__dict__.items()}
    object.__setattr__(result, "__dict__", fields)
    extra = value.__pydantic_extra__
    object.__setattr__(result, "__pydantic_extra__", None if extra is None else frozen(extra))
    return result
