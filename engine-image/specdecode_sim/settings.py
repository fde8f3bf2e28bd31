"""Simulator-only knobs: environment variables `SPECDECODE_SIM_*` and a JSON profile file.

vLLM has no such flags, so they never appear on the command line: the operator renders
one pod spec for both images. Precedence: environment > profile file > defaults.
The profile file (`SPECDECODE_SIM_PROFILE=/path.json`) takes the same names in lower
case without the prefix, plus `hardware` / `model` objects overriding profile fields
`acceptance` as a number or an object {"method/class" | "class": {first, decay}}, and
`repetition` {class: {copy_start, copy_continue, median_output_tokens}} for the text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specdecode_sim.acceptance import WORKLOAD_CLASSES, AcceptanceModel, PositionCurve
from specdecode_sim.profiles import HARDWARE, MODELS
from specdecode_sim.releases import (
    PINNED_VLLM_VERSION,
    Release,
    ReleaseError,
    parse_release,
    release_from_env,
)

PREFIX = "SPECDECODE_SIM_"


class SettingsError(ValueError):
    """A knob with a value the simulator cannot use (reported at start, exit 1)."""


@dataclass(frozen=True)
class Faults:
    """Injected failures, all off by default."""

    crash_after_requests: int | None = None
    crash_after_seconds: float | None = None
    error_rate: float = 0.0
    latency_spike_probability: float = 0.0
    latency_spike_seconds: float = 0.0
    # A share of streamed requests that stop streaming after a few chunks without closing
    # the connection (a hung request), from the engine's seeded fault draws (`server`).
    hang_rate: float = 0.0
    # A hung request may stop before its first content token (a late start: the stream
    # opens and nothing ever comes), not only after 1..HANG_WITHIN_CHUNKS chunks.
    hang_before_first_token: bool = False
    # A fault that shows under load, late: no request hangs before the engine has held at
    # least `hang_from_load` requests at once (0: from its first), and then not for
    # `hang_delay_seconds` more (wall seconds), so a test can start hangs inside a stage's
    # measured window instead of its warm-up.
    hang_from_load: int = 0
    hang_delay_seconds: float = 0.0


@dataclass(frozen=True)
class SimSettings:
    """Everything the simulator needs that vLLM's CLI does not carry."""

    gpu: str = "H100"
    model_profile: str | None = None
    workload: str = "chat"
    time_scale: float = 1.0
    clock_lag_budget_seconds: float = 0.5
    startup_seconds: float = 0.0
    warmup_seconds: float = 0.0
    bind_host: str | None = None
    acceptance: AcceptanceModel = field(default_factory=AcceptanceModel)
    hardware_overrides: Mapping[str, Any] = field(default_factory=dict)
    model_overrides: Mapping[str, Any] = field(default_factory=dict)
    repetition_overrides: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    faults: Faults = field(default_factory=Faults)
    # SPECDECODE_VLLM_VERSION (no SIM_ prefix: the operator sets it on every engine pod).
    release: Release = field(default_factory=lambda: parse_release(PINNED_VLLM_VERSION))
    # A/A control: validate the speculative config, then decode plainly.
    ignore_speculative: bool = False


def _number(name: str, value: Any, low: float, high: float | None = None) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError) as error:
        raise SettingsError(f"{PREFIX}{name.upper()}={value!r} is not a number") from error
    if number < low or (high is not None and number > high):
        bound = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise SettingsError(f"{PREFIX}{name.upper()}={value!r} must be {bound}")
    return number


def _optional_int(name: str, value: Any) -> int | None:
    return None if value in (None, "") else int(_number(name, value, 1))


def _optional_float(name: str, value: Any) -> float | None:
    return None if value in (None, "") else _number(name, value, 0)


def _acceptance(value: Any) -> AcceptanceModel:
    if value in (None, ""):
        return AcceptanceModel()
    if isinstance(value, dict):
        curves = []
        for key, spec in value.items():
            if not isinstance(spec, dict):
                raise SettingsError(f"acceptance[{key!r}] must be an object {{first, decay}}")
            first = _number("acceptance.first", spec.get("first"), 0, 1)
            decay = _number("acceptance.decay", spec.get("decay", 1.0), 0, 1)
            curves.append((str(key), PositionCurve(first, decay)))
        return AcceptanceModel(overrides=tuple(curves))
    return AcceptanceModel(constant=_number("acceptance", value, 0, 1))


def _repetition(value: dict[str, Any]) -> dict[str, dict[str, float]]:
    table: dict[str, dict[str, float]] = {}
    for workload, fields in value.items():
        if workload not in WORKLOAD_CLASSES or not isinstance(fields, dict):
            raise SettingsError(f"repetition[{workload!r}]: known classes {list(WORKLOAD_CLASSES)}")
        table[workload] = {
            str(name): _number(f"repetition.{name}", number, 0) for name, number in fields.items()
        }
    return table


def _read_profile_file(path: str) -> dict[str, Any]:
    try:
        loaded = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise SettingsError(f"{PREFIX}PROFILE={path}: {error}") from error
    if not isinstance(loaded, dict):
        raise SettingsError(f"{PREFIX}PROFILE={path}: top level must be a JSON object")
    return loaded


def _flag(name: str, value: Any) -> bool:
    text = str(value if value is not None else "").strip().lower()
    if text in ("", "0", "false", "no"):
        return False
    if text in ("1", "true", "yes"):
        return True
    raise SettingsError(f"{PREFIX}{name.upper()}={value!r}: use 1 or 0")


def load_settings(environ: Mapping[str, str]) -> SimSettings:
    """Merge the profile file and the environment into validated settings."""
    try:
        release = release_from_env(environ)
    except ReleaseError as error:
        raise SettingsError(str(error)) from error
    values: dict[str, Any] = {}
    if profile_path := environ.get(f"{PREFIX}PROFILE"):
        values.update(_read_profile_file(profile_path))
    for key, raw in environ.items():
        if key.startswith(PREFIX) and key != f"{PREFIX}PROFILE":
            values[key[len(PREFIX) :].lower()] = raw
    gpu = str(values.get("gpu", "H100")).upper()
    if gpu not in HARDWARE:
        raise SettingsError(f"{PREFIX}GPU={gpu!r}: known GPUs are {sorted(HARDWARE)}")
    model_profile = values.get("model_profile")
    if model_profile is not None and str(model_profile).lower() not in MODELS:
        raise SettingsError(f"{PREFIX}MODEL_PROFILE={model_profile!r}: known {sorted(MODELS)}")
    workload = str(values.get("workload", "chat")).lower()
    if workload not in WORKLOAD_CLASSES:
        raise SettingsError(f"{PREFIX}WORKLOAD={workload!r}: known {list(WORKLOAD_CLASSES)}")
    time_scale = _number("time_scale", values.get("time_scale", 1.0), 0)
    if time_scale <= 0:
        raise SettingsError(f"{PREFIX}TIME_SCALE must be > 0")
    for section in ("hardware", "model", "repetition"):
        if not isinstance(values.get(section, {}), dict):
            raise SettingsError(f"profile file: {section!r} must be an object")
    return SimSettings(
        gpu=gpu,
        model_profile=str(model_profile).lower() if model_profile is not None else None,
        workload=workload,
        time_scale=time_scale,
        clock_lag_budget_seconds=_number(
            "clock_lag_budget_seconds", values.get("clock_lag_budget_seconds", 0.5), 0
        ),
        startup_seconds=_number("startup_seconds", values.get("startup_seconds", 0), 0),
        warmup_seconds=_number("warmup_seconds", values.get("warmup_seconds", 0), 0),
        bind_host=values.get("bind_host") or None,
        acceptance=_acceptance(values.get("acceptance")),
        hardware_overrides=dict(values.get("hardware", {})),
        model_overrides=dict(values.get("model", {})),
        repetition_overrides=_repetition(values.get("repetition", {})),
        release=release,
        ignore_speculative=_flag("ignore_speculative", values.get("ignore_speculative")),
        faults=Faults(
            crash_after_requests=_optional_int(
                "crash_after_requests", values.get("crash_after_requests")
            ),
            crash_after_seconds=_optional_float(
                "crash_after_seconds", values.get("crash_after_seconds")
            ),
            error_rate=_number("error_rate", values.get("error_rate", 0), 0, 1),
            latency_spike_probability=_number(
                "latency_spike_probability", values.get("latency_spike_probability", 0), 0, 1
            ),
            latency_spike_seconds=_number(
                "latency_spike_seconds", values.get("latency_spike_seconds", 0), 0
            ),
            hang_rate=_number("hang_rate", values.get("hang_rate", 0), 0, 1),
            hang_before_first_token=_flag(
                "hang_before_first_token", values.get("hang_before_first_token")
            ),
            hang_from_load=int(_number("hang_from_load", values.get("hang_from_load", 0), 0)),
            hang_delay_seconds=_number(
                "hang_delay_seconds", values.get("hang_delay_seconds", 0), 0
            ),
        ),
    )
