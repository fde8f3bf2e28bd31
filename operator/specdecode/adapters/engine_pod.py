"""The values of an engine pod that take logic: vLLM arguments, env, resources, probes.

Kept apart from the templates so each rule (which flag, which order, which probe timing)
is a small pure function a test can call; the templates only lay the values out.
"""

from __future__ import annotations

from typing import Any

from specdecode.api.rollout import SpecDecodeRolloutSpec
from specdecode.speculative_document import RunnableConfig

GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
HUB_TOKEN_ENV = "HF_TOKEN"
# The vLLM release the operator validated the config against (spec.engine.vllmVersion,
# else the image tag, else the pin). vLLM ignores it; the simulator imitates that release;
# the /version check compares the running engine with it.
VLLM_VERSION_ENV = "SPECDECODE_VLLM_VERSION"
# Startup probe periods tried, longest first: the first that divides the startup timeout
# makes periodSeconds x failureThreshold equal it exactly.
STARTUP_PERIODS = (10, 5, 2, 1)


def engine_args(spec: SpecDecodeRolloutSpec, config: RunnableConfig | None) -> list[str]:
    """`vllm serve` arguments: the model, our flags in a fixed order, then extraArgs."""
    model = spec.model
    args = [
        model.name,
        "--host",
        "0.0.0.0",
        "--port",
        str(spec.engine.port),
        "--served-model-name",
        model.served_name,
        "--tensor-parallel-size",
        str(spec.gpu_pool.tensor_parallel_size),
    ]
    if model.max_model_len is not None:
        args += ["--max-model-len", str(model.max_model_len)]
    args += ["--dtype", model.dtype.value]
    if model.revision is not None:
        args += ["--revision", model.revision]
    args += ["--gpu-memory-utilization", _number(spec.engine.gpu_memory_utilization)]
    if config is not None:
        args += ["--speculative-config", config.to_cli_json()]
    return args + list(model.extra_args)


def _number(value: float) -> str:
    """A float as vLLM's argparse reads it, without float noise (0.9, not 0.90000001)."""
    return repr(float(value))


def engine_env(spec: SpecDecodeRolloutSpec) -> list[dict[str, Any]]:
    """HF_TOKEN from the hub token Secret, the vLLM release, then the user's env in order.

    The user's order is kept because later entries may refer to earlier ones ($(VAR)).
    """
    env: list[dict[str, Any]] = []
    secret = spec.engine.hub_token_secret_ref
    if secret is not None:
        env.append(
            {
                "name": HUB_TOKEN_ENV,
                "valueFrom": {"secretKeyRef": {"name": secret.name, "key": secret.key}},
            }
        )
    env.append({"name": VLLM_VERSION_ENV, "value": spec.engine.effective_vllm_version})
    ours = {HUB_TOKEN_ENV, VLLM_VERSION_ENV}
    user_env = [item for item in spec.engine.env if item.get("name") not in ours]
    return env + [dict(item) for item in user_env]


def engine_resources(spec: SpecDecodeRolloutSpec) -> dict[str, dict[str, str]]:
    """engine.resources with the GPU count added to requests and limits (ours wins)."""
    pool = spec.gpu_pool
    gpus = {pool.gpu_resource_name: str(pool.gpus_per_replica)}
    resources = {kind: dict(values) for kind, values in spec.engine.resources.items()}
    for kind in ("requests", "limits"):
        resources[kind] = {**resources.get(kind, {}), **gpus}
    return {kind: dict(sorted(values.items())) for kind, values in sorted(resources.items())}


def node_selector(spec: SpecDecodeRolloutSpec) -> dict[str, str]:
    """The pool's node selector, plus the GPU product label when a product is named."""
    selector = dict(spec.gpu_pool.node_selector)
    if spec.gpu_pool.gpu_product is not None:
        selector[GPU_PRODUCT_LABEL] = spec.gpu_pool.gpu_product
    return dict(sorted(selector.items()))


def tolerations(spec: SpecDecodeRolloutSpec) -> list[dict[str, Any]]:
    """The pool's tolerations, in core/v1 shape."""
    return [
        toleration.model_dump(mode="json", by_alias=True, exclude_none=True)
        for toleration in spec.gpu_pool.tolerations
    ]


def startup_probe_timing(timeout_seconds: int) -> tuple[int, int]:
    """(periodSeconds, failureThreshold) whose product is exactly the startup timeout."""
    period = next(p for p in STARTUP_PERIODS if timeout_seconds % p == 0)
    return period, timeout_seconds // period


def production_strategy(replicas: int) -> dict[str, Any]:
    """How production rolls to a new config.

    One replica: surge one new pod first and never drop the only one (it needs room for
    one more replica; at promotion the removed shadows have just freed two). Several
    replicas: replace one at a time without surging, because a GPU pool rarely has a
    spare replica's worth of GPUs and serving capacity can dip by one replica.
    """
    if replicas <= 1:
        rolling = {"maxSurge": 1, "maxUnavailable": 0}
    else:
        rolling = {"maxSurge": 0, "maxUnavailable": 1}
    return {"type": "RollingUpdate", "rollingUpdate": rolling}


def shadow_strategy() -> dict[str, Any]:
    """Shadows are one replica with no live traffic: replace in place, no spare GPUs."""
    return {"type": "Recreate"}
