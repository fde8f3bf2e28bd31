"""No rendered engine runs a speculative config the operator did not choose for it (in the
JSON form or vLLM 0.32's --spec-* shorthands), stops logging stats or becomes unjudgeable:
the render-time guard raises on one, and over generated extraArgs every argv the models
let through reads, to an oracle of vLLM 0.32.0's parser (`vllm_argv_oracle`), as the
operator meant it. Which destination is which comes from the engine flag table."""

from __future__ import annotations

import random
from typing import Any

import pytest
from pydantic import ValidationError
from render_cases import UID, example_spec
from vllm_argv_oracle import destinations, recorded

from specdecode.adapters.engine_argv_guard import UnsafeEngineArgs, container_args
from specdecode.adapters.render import render_children
from specdecode.adapters.speculative_boundary import setting_of
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.api.engine_flag_classes import FlagClass
from specdecode.api.engine_flag_table import TABLES
from specdecode.api.workload import ModelSpec
from specdecode.domain.decision import DesiredChildren

pytestmark = pytest.mark.unit

SPEC = example_spec("examples/specdecode-rollout.yaml")
CONFIG = SPEC.speculative
CLASSES = {flag.dest: flag.flag_class for flag in TABLES["0.32.0"]}
BLIND = {
    dest for dest, cls in CLASSES.items() if cls in (FlagClass.STATS_OFF, FlagClass.UNJUDGEABLE)
}
SHORTHANDS = {
    dest
    for dest, cls in CLASSES.items()
    if cls is FlagClass.SPECULATIVE and dest != "speculative_config"
}


def unchecked(spec: SpecDecodeRolloutSpec, extra_args: list[str]) -> SpecDecodeRolloutSpec:
    """`spec` with extraArgs the models would refuse (model_copy skips validation)."""
    model = spec.model.model_copy(update={"extra_args": extra_args})
    return spec.model_copy(update={"model": model})


def deployments(spec: SpecDecodeRolloutSpec, desired: DesiredChildren) -> dict[str, list[str]]:
    """role -> the vLLM container's args, for every engine Deployment rendered."""
    objects = render_children("r", "ns", UID, spec, desired)
    return {
        o["metadata"]["labels"]["specdecode.io/role"]: container_args(o)
        for o in objects
        if o["kind"] == "Deployment"
    }


ANALYSIS = DesiredChildren(production=None, shadows=True, candidate=setting_of(CONFIG))
PROMOTED = DesiredChildren(production=setting_of(CONFIG))


@pytest.mark.parametrize(
    "extra",
    [
        ["--speculative_config", '{"method":"ngram"}'],
        ["--speculative-config.method", "ngram"],
        ["-sc={}"],
        ["--disable_log_stats"],
        ["--disable-log"],
        ["--headless"],
        ["--config", "engine.yaml"],
        ["--spec-method", "ngram"],
        ["--spec_tokens=3"],
        ["--spec-mod", "org/draft"],
        ["--api-key", "k"],
        ["--grpc"],
    ],
)
def test_rendering_refuses_an_argv_that_speculates_or_loses_stats(extra: list[str]) -> None:
    with pytest.raises(UnsafeEngineArgs):
        deployments(unchecked(SPEC, extra), ANALYSIS)


def test_rendering_accepts_the_operators_own_configs() -> None:
    args = deployments(SPEC, ANALYSIS)
    assert "--speculative-config" not in args["baseline"] + args["production"]
    assert args["candidate"].count("--speculative-config") == 1
    assert deployments(SPEC, PROMOTED)["production"].count("--speculative-config") == 1


# Generated argument lists: options of the real vLLM 0.32 table (reserved ones weighted up)
# spelled as vLLM accepts them, with values in any of vLLM's forms.
OPTIONS = {o: a["nargs"] == 0 for a in recorded()["actions"] for o in a["options"]}
RISKY = [
    "--speculative-config",
    "-sc",
    "--disable-log-stats",
    "--headless",
    "--config",
    "--spec-method",
    "--spec-tokens",
    "--spec-model",
    "--api-key",
    "--tensor-parallel-size",
    "-tp",
    "--port",
]
VALUES = ["4", "0.5", "ngram", '{"method":"ngram","num_speculative_tokens":2}', "x", "true"]


def spelling(rng: random.Random, option: str) -> list[str]:
    """One way to write `option` (and maybe a value) that vLLM reads."""
    name = option
    if option.startswith("--"):
        if rng.random() < 0.4:
            name = name.replace("-", "_").replace("__", "--", 1)
        if rng.random() < 0.3:
            name = name[: rng.randint(3, len(name))]
    value = rng.choice(VALUES)
    form = rng.randrange(4)
    if form == 0 or (OPTIONS[option] and rng.random() < 0.8):
        return [name]
    if form == 1:
        return [f"{name}={value}"]
    if form == 2:
        return [f"{name}.{rng.choice(['method', 'level', 'k'])}", value]
    return [name, value]


def generated(rng: random.Random) -> list[str]:
    args: list[str] = []
    for _ in range(rng.randint(1, 4)):
        option = rng.choice(RISKY) if rng.random() < 0.3 else rng.choice(list(OPTIONS))
        args += spelling(rng, option)
    return args


def check_argv(role: str, argv: list[str], expected: str | None, tally: dict[str, int]) -> None:
    """The oracle's reading of one rendered argv: the operator's config or none, stats on."""
    found = destinations(argv)
    if found is None:  # vLLM itself would refuse this argv: the engine never starts
        tally["vllm refuses"] += 1
        return
    assert found.get("speculative_config") == expected, (role, argv)
    assert not any(dest in found for dest in SHORTHANDS), (role, argv)
    assert not any(dest in found for dest in BLIND), (role, argv)
    tally["read as meant"] += 1


def test_no_generated_extra_args_make_an_engine_speculate_unasked_or_lose_stats() -> None:
    rng = random.Random(22)
    tally: dict[str, int] = {"refused by the models": 0, "vllm refuses": 0, "read as meant": 0}
    base = SPEC.model.to_wire()
    for _ in range(600):
        extra = generated(rng)
        try:
            model = ModelSpec.model_validate({**base, "extraArgs": extra})
        except ValidationError:
            tally["refused by the models"] += 1
            continue
        spec = SPEC.model_copy(update={"model": model})
        assert CONFIG is not None
        wanted: dict[str, Any] = {"candidate": CONFIG.to_cli_json()}
        for role, argv in deployments(spec, ANALYSIS).items():
            check_argv(role, argv, wanted.get(role), tally)
        check_argv(
            "promoted", deployments(spec, PROMOTED)["production"], CONFIG.to_cli_json(), tally
        )
    assert tally["refused by the models"] >= 100, tally
    assert tally["read as meant"] >= 300, tally
