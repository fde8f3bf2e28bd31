"""`spec.model`, `spec.gpuPool`, `spec.engine`, `spec.serving`: what runs, and where.

These describe the three Deployments the operator renders (production, baseline,
candidate), which share everything here and differ only in the speculative config.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any

from pydantic import Field, model_validator

from specdecode.api import engine_args, vllm_versions
from specdecode.api import rules as r
from specdecode.api.base import KubeModel, optional
from specdecode.api.version_rules import engine_rules

# One rule per non-free destination of the engine flag table (api/engine_flag_table.py, read
# through api/engine_args.py): every spelling vLLM reads (dashes or underscores, =value,
# dotted keys, short options, prefixes) is refused.
# The models refuse with the same table through `engine_args.reserved_hits`, which names the
# offending argument; the API server's message names the destination and its flags.
MODEL_RULES = r.RuleSet(
    tuple(
        r.Rule(
            r.implies(
                r.Has(r.at("extraArgs")),
                r.Not(
                    r.some(
                        r.at("extraArgs"),
                        "a",
                        r.matches(r.Ref("a"), engine_args.reserved_arg_regex(reserved)),
                    )
                ),
            ),
            f"model.extraArgs must not set vLLM's {reserved.dest} "
            f"({', '.join(reserved.options)} in any spelling vLLM reads): the operator owns "
            f"it ({reserved.source})",
            ".extraArgs",
            "FieldValueForbidden",
        )
        for reserved in engine_args.RESERVED
    )
)
GPU_POOL_RULES = r.RuleSet(
    (
        r.Rule(
            r.Binary("==", r.at("gpusPerReplica"), r.at("tensorParallelSize")),
            "gpuPool.gpusPerReplica must equal gpuPool.tensorParallelSize",
            ".gpusPerReplica",
        ),
    )
)
ENGINE_RULES = r.RuleSet(engine_rules())
IMAGE_PATTERN = re.compile(
    r"^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*"
    r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$"
)


class Dtype(StrEnum):
    """Model weight dtype, as `vllm serve --dtype` accepts."""

    AUTO = "auto"
    BFLOAT16 = "bfloat16"
    FLOAT16 = "float16"
    FLOAT32 = "float32"


class ModelSpec(KubeModel):
    """The target model every engine serves."""

    name: str = Field(
        min_length=1, max_length=256, description="Model to serve: a hub id or a local path."
    )
    revision: str | None = optional("Model revision (branch, tag or commit).", max_length=128)
    served_model_name: str | None = optional(
        "Name clients use in requests; defaults to the model name. Also the "
        "`model_name` label of vLLM's metrics.",
        min_length=1,
        max_length=128,
    )
    max_model_len: int | None = optional("Maximum context length (`--max-model-len`).", ge=16)
    dtype: Dtype = Field(default=Dtype.AUTO, description="Weight dtype (`--dtype`).")
    extra_args: list[Annotated[str, Field(min_length=1, max_length=1024)]] = Field(
        default_factory=list,
        max_length=64,
        description="More `vllm serve` flags, passed through as given. Any argument that "
        "sets what the operator renders (the speculative config, also through --spec-method, "
        "--spec-model or --spec-tokens; model, served name, revision, max model len, dtype, "
        "tensor parallel size, GPU memory utilization, host, port) or needs (stats logging, "
        "an OpenAI HTTP API without key or TLS on the port: uds, headless, grpc, api-key, "
        "ssl, tokens-only) is refused in every spelling vLLM reads: dashes or underscores, "
        "=value, dotted .key forms, short options, prefixes, --config.",
    )

    @model_validator(mode="after")
    def _no_reserved_flags(self) -> ModelSpec:
        hits = engine_args.reserved_hits(self.extra_args)
        if hits:
            raise ValueError("; ".join(hit.message() for hit in hits))
        return self

    @property
    def served_name(self) -> str:
        """The name requests and metrics use."""
        return self.served_model_name or self.name


class Toleration(KubeModel):
    """A pod toleration, as in core/v1."""

    key: str | None = optional("Taint key to tolerate.")
    operator: str | None = optional("Exists or Equal.", pattern="^(Exists|Equal)$")
    value: str | None = optional("Taint value (operator Equal).")
    effect: str | None = optional(
        "Taint effect to tolerate; empty matches all.",
        pattern="^(NoSchedule|PreferNoSchedule|NoExecute)$",
    )
    toleration_seconds: int | None = optional("For NoExecute taints.")


class GpuPoolSpec(KubeModel):
    """Where engines run: the GPU nodes and the GPU shape of one replica."""

    node_selector: dict[str, str] = Field(
        default_factory=dict, description="Node labels the engine pods require."
    )
    tolerations: list[Toleration] = Field(
        default_factory=list, description="Tolerations for the pool's taints."
    )
    gpu_resource_name: str = Field(
        default="nvidia.com/gpu",
        min_length=1,
        description="Extended resource that counts GPUs.",
    )
    gpus_per_replica: int = Field(
        default=1, ge=1, le=16, description="GPUs per engine replica; equals tensorParallelSize."
    )
    tensor_parallel_size: int = Field(
        default=1, ge=1, le=16, description="`--tensor-parallel-size`; equals gpusPerReplica."
    )
    gpu_product: str | None = optional(
        "GPU product (label nvidia.com/gpu.product), added to the node selector.", max_length=128
    )

    @model_validator(mode="after")
    def _gpus_match_tp(self) -> GpuPoolSpec:
        _raise_violations(GPU_POOL_RULES, self)
        return self


class SecretKeyRef(KubeModel):
    """A key in a Secret of the rollout's namespace."""

    name: str = Field(min_length=1, max_length=253, description="Secret name.")
    key: str = Field(default="token", min_length=1, description="Key in the Secret.")


class ModelCacheSpec(KubeModel):
    """A volume that holds downloaded weights, so restarts don't download again."""

    claim_name: str = Field(min_length=1, description="PersistentVolumeClaim to mount.")
    mount_path: str = Field(
        default="/root/.cache/huggingface", pattern="^/", description="Where to mount it."
    )


class EngineSpec(KubeModel):
    """The engine container: image, resources and environment."""

    image: str = Field(
        min_length=1,
        max_length=512,
        pattern=IMAGE_PATTERN.pattern,
        description="Engine image: vllm/vllm-openai:<tag>, or the simulator image.",
    )
    vllm_version: str | None = optional(
        "vLLM release the image runs (supported: "
        f"{vllm_versions.SUPPORTED_RANGE_TEXT}); decides which speculative methods and "
        "fields are accepted. Empty: the image tag's v0.Y.Z, else "
        f"{vllm_versions.PINNED_VLLM_VERSION}. The running engine's /version must match.",
        pattern=vllm_versions.VERSION_PATTERN,
        max_length=16,
    )
    image_pull_policy: str = Field(
        default="IfNotPresent", pattern="^(Always|IfNotPresent|Never)$", description="Pull policy."
    )
    port: int = Field(default=8000, ge=1, le=65535, description="Port the engine serves on.")
    gpu_memory_utilization: float = Field(
        default=0.9, gt=0, le=1, description="`--gpu-memory-utilization`."
    )
    resources: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="CPU and memory requests and limits (GPUs come from gpuPool).",
    )
    env: list[dict[str, Any]] = Field(
        default_factory=list, description="Extra environment variables (core/v1 EnvVar)."
    )
    model_cache: ModelCacheSpec | None = optional("Weights cache volume.")
    hub_token_secret_ref: SecretKeyRef | None = optional(
        "Secret with the model hub token (HF_TOKEN)."
    )
    startup_timeout_seconds: int = Field(
        default=1800, ge=10, description="How long an engine may take to load before it fails."
    )

    @model_validator(mode="after")
    def _supported_release(self) -> EngineSpec:
        _raise_violations(ENGINE_RULES, self)
        return self

    @property
    def effective_vllm_version(self) -> str:
        """The release the engines run: vllmVersion, else the image tag, else the pin."""
        return vllm_versions.effective_version(self.vllm_version, self.image)


class ServingSpec(KubeModel):
    """The production Deployment's size."""

    replicas: int = Field(default=1, ge=0, le=1000, description="Production replicas.")


def _raise_violations(rules: r.RuleSet, model: KubeModel) -> None:
    problems = rules.violations(model.to_wire())
    if problems:
        raise ValueError("; ".join(problems))
