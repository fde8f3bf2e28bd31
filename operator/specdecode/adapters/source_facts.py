"""The source's vLLM container, and what its argv and image say of the rollout's spec.

Why apart from `workload_source`: a `workloadRef` rollout may leave `model` and `engine`
out, so what the container states (model, served name, image, release, port) must be read
before there is a spec to check the source against. This module reads it; the domain
(`source_spec.completion`) fills the spec in (`reconciler.source_boundary` builds it);
`workload_source` then checks the source against the resolved spec as it checks a spec
written in full. Pure: JSON in, facts out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from specdecode.adapters.engine_pod import VLLM_VERSION_ENV
from specdecode.api.adoption import WorkloadRef
from specdecode.api.engine_args import last_value
from specdecode.api.vllm_versions import version_from_image
from specdecode.domain.source import SourceFacts

DEFAULT_PORT = 8000  # vLLM's --port default


def vllm_container(template: Mapping[str, Any], wanted: str | None) -> Mapping[str, Any] | str:
    """The vLLM container of a pod template (see `WorkloadRef.container`), or why none is."""
    containers: list[Mapping[str, Any]] = list(
        ((template.get("spec") or {}).get("containers")) or []
    )
    if wanted is not None:
        found = [c for c in containers if c.get("name") == wanted]
        return found[0] if found else f"no container named {wanted!r}"
    if len(containers) == 1:
        return containers[0]
    named = [c for c in containers if c.get("name") == "vllm"]
    serving = [c for c in containers if "serve" in argv_of(c)]
    for candidates in (named, serving):
        if len(candidates) == 1:
            return candidates[0]
    return "more than one container and none named vllm: set workloadRef.container"


def argv_of(container: Mapping[str, Any]) -> list[str]:
    """The container's whole argv as vLLM parses it: command, then args."""
    return [str(a) for a in (container.get("command") or []) + (container.get("args") or [])]


def model_tag(argv: Sequence[str]) -> str | None:
    """The model `vllm serve` loads: the positional after `serve`, else `--model`."""
    if "serve" in argv:
        rest = argv[argv.index("serve") + 1 :]
        if rest and not rest[0].startswith("-"):
            return rest[0]
    return last_value(argv, "--model")


def source_facts(deployment: Mapping[str, Any] | None, ref: WorkloadRef) -> SourceFacts | str:
    """What the source's vLLM container states, or why it cannot be read (absent, no vLLM
    container, a port or context length that is not a number)."""
    name = f"Deployment/{ref.name}"
    if deployment is None:
        return f"{name} not found in the rollout's namespace"
    template = (deployment.get("spec") or {}).get("template") or {}
    container = vllm_container(template, ref.container)
    if isinstance(container, str):
        return f"{name}: {container}"
    argv = argv_of(container)
    port, max_len = last_value(argv, "--port"), last_value(argv, "--max-model-len")
    for flag, value in (("--port", port), ("--max-model-len", max_len)):
        if value is not None and not value.isdigit():
            return f"{name}: its vLLM argv gives {flag} {value!r}, not a number"
    image = container.get("image")
    env = {str(e.get("name")): e.get("value") for e in container.get("env") or []}
    stated = env.get(VLLM_VERSION_ENV)
    release = stated if isinstance(stated, str) else None
    return SourceFacts(
        name,
        model=model_tag(argv),
        served_model_name=last_value(argv, "--served-model-name"),
        revision=last_value(argv, "--revision"),
        max_model_len=None if max_len is None else int(max_len),
        image=str(image) if image else None,
        vllm_version=release or (version_from_image(str(image)) if image else None),
        port=DEFAULT_PORT if port is None else int(port),
    )
