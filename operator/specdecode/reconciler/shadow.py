"""Builds the shadow-traffic source a rollout's spec asks for.

Prompt sets are read from the referenced ConfigMap or Secret when a stage starts; a missing
object or a bad line does not raise into the reconcile: it becomes a source whose `error`
says why, which the domain turns into a Failed phase with that reason.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kubernetes.client import ApiException

from specdecode.adapters.kube.client import KubeClients
from specdecode.adapters.kube.endpoints import ready_endpoints
from specdecode.adapters.render import child_name
from specdecode.adapters.traffic.driver import DriverConfig, EndpointResolver, PairedDriver
from specdecode.domain.prompts import (
    PromptSourceError,
    ShadowRequest,
    builtin_prompts,
    parse_jsonl,
)
from specdecode.adapters.traffic.protocol import ShadowTraffic
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.domain.decision import TrafficPlan
from specdecode.domain.observations import ChildRole, LatencySamples
from specdecode.reconciler.runtime import Runtime

BUILTIN_PROMPT_COUNT = 256


@dataclass(frozen=True)
class UnusableTraffic:
    """A source that cannot run; it only reports why."""

    reason: str

    async def run(self) -> None:
        """Nothing to drive."""

    def snapshot(self, since: float, now: float) -> tuple[LatencySamples, LatencySamples]:
        """No samples, ever."""
        return LatencySamples(), LatencySamples()

    @property
    def error(self) -> str | None:
        """The reason the source cannot run."""
        return self.reason


def load_prompts(
    kube: KubeClients, namespace: str, spec: SpecDecodeRolloutSpec
) -> list[ShadowRequest]:
    """The prompt set the spec names: a ConfigMap or Secret key, else a built-in set."""
    traffic = spec.analysis.traffic
    if traffic.config_map_ref is not None:
        ref = traffic.config_map_ref
        data = _read(
            f"ConfigMap {namespace}/{ref.name}",
            ref.key,
            lambda: kube.core.read_namespaced_config_map(ref.name, namespace).data,
        )
        text = data if isinstance(data, str) else data.decode()
        return parse_jsonl(text, traffic.max_tokens)
    if traffic.secret_ref is not None:
        ref = traffic.secret_ref
        encoded = _read(
            f"Secret {namespace}/{ref.name}",
            ref.key,
            lambda: kube.core.read_namespaced_secret(ref.name, namespace).data,
        )
        return parse_jsonl(base64.b64decode(encoded).decode(), traffic.max_tokens)
    return builtin_prompts(
        traffic.builtin_workload, BUILTIN_PROMPT_COUNT, traffic.seed, traffic.max_tokens
    )


def _read(
    what: str, key: str, fetch: Callable[[], Mapping[str, str | bytes] | None]
) -> str | bytes:
    """One key of a ConfigMap or Secret, or a PromptSourceError that names the object."""
    try:
        data = fetch() or {}
    except ApiException as error:
        if error.status == 404:
            raise PromptSourceError(f"{what} does not exist") from error
        raise PromptSourceError(f"{what} cannot be read: {error.status} {error.reason}") from error
    if key not in data:
        raise PromptSourceError(f"{what} has no key {key}")
    return data[key]


async def build_shadow_traffic(
    runtime: Runtime, namespace: str, rollout: str, spec: SpecDecodeRolloutSpec, plan: TrafficPlan
) -> ShadowTraffic:
    """The source for one stage: paired prompt replay, or why it cannot run.

    Only Prompts traffic is driven by the operator; Mirror traffic is the gateway's (see
    `reconciler.mirror`).
    """
    traffic = spec.analysis.traffic
    try:
        prompts = await asyncio.to_thread(load_prompts, runtime.kube, namespace, spec)
    except PromptSourceError as error:
        return UnusableTraffic(f"prompt set unusable: {error}")

    def resolver(role: ChildRole) -> EndpointResolver:
        service = child_name(rollout, role)
        return lambda: asyncio.to_thread(ready_endpoints, runtime.kube, namespace, service)

    config = DriverConfig(
        model=spec.model.served_name,
        concurrency=plan.concurrency,
        request_rate=plan.request_rate,
        seed=traffic.seed,
        timeout_seconds=traffic.request_timeout_seconds,
        max_requests=traffic.max_requests_per_stage,
        max_samples=runtime.settings.max_samples_per_stage,
        max_output_tokens=traffic.max_output_tokens_per_stage,
    )
    return PairedDriver(
        config, prompts, resolver(ChildRole.BASELINE), resolver(ChildRole.CANDIDATE), runtime.http
    )
