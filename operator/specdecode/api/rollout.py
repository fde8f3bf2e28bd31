"""The SpecDecodeRollout resource: identity (group, version, kind) and its spec.

The CRD YAML in `crds/` is generated from these models by `specdecode.api.crdgen`.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from specdecode.api.analysis import AnalysisSpec
from specdecode.api.base import KubeModel
from specdecode.api.speculative import SpeculativeConfig
from specdecode.api.status import SpecDecodeRolloutStatus
from specdecode.api.workload import EngineSpec, GpuPoolSpec, ModelSpec, ServingSpec

GROUP = "specdecode.io"
VERSION = "v1alpha1"
KIND = "SpecDecodeRollout"
PLURAL = "specdecoderollouts"
SINGULAR = "specdecoderollout"
SHORT_NAMES = ("sdr",)
API_VERSION = f"{GROUP}/{VERSION}"

# The one annotation users (and the kubectl plugin, and Argo CD actions) write to steer.
ACTION_ANNOTATION = f"{GROUP}/action"
ACTIONS = ("promote", "abort", "retry")


class SpecDecodeRolloutSpec(KubeModel):
    """The desired state: a model on a GPU pool, and the speculative config it should run."""

    model: ModelSpec = Field(description="The target model.")
    gpu_pool: GpuPoolSpec = Field(
        default_factory=GpuPoolSpec, description="GPU nodes and GPUs per replica."
    )
    engine: EngineSpec = Field(description="Engine image, resources and environment.")
    serving: ServingSpec = Field(
        default_factory=ServingSpec, description="Production Deployment size."
    )
    speculative: SpeculativeConfig | None = Field(
        default=None,
        description="vLLM --speculative-config to roll out; empty means plain decoding.",
    )
    analysis: AnalysisSpec = Field(
        default_factory=AnalysisSpec, description="Shadow traffic, stages and gates."
    )

    @model_validator(mode="after")
    def _draft_fits_target(self) -> SpecDecodeRolloutSpec:
        spec = self.speculative
        if spec is None:
            return self
        tp = self.gpu_pool.tensor_parallel_size
        if spec.draft_tensor_parallel_size not in (None, 1, tp):
            raise ValueError(
                "speculative.draft_tensor_parallel_size must be 1 or "
                f"gpuPool.tensorParallelSize ({tp})"
            )
        target_len = self.model.max_model_len
        if (
            spec.max_model_len is not None
            and target_len is not None
            and (spec.max_model_len > target_len)
        ):
            raise ValueError("speculative.max_model_len must be <= model.maxModelLen")
        return self


class SpecDecodeRollout(KubeModel):
    """The resource as a whole, for code that reads objects from the API server."""

    api_version: str = Field(default=API_VERSION, alias="apiVersion")
    kind: str = Field(default=KIND)
    metadata: dict[str, object] = Field(default_factory=dict)
    spec: SpecDecodeRolloutSpec
    status: SpecDecodeRolloutStatus = Field(default_factory=SpecDecodeRolloutStatus)
