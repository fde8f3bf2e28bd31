"""Children: observed from the cache, applied only where they differ, pruned only if present."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from controller_fakes import EAGLE3, NAME, NAMESPACE, UID, FakeCluster, raw_spec, server_copy

from specdecode.adapters.kube.children import (
    covers,
    error_line,
    observe_children,
    shadows_to_delete,
    stale_objects,
)
from specdecode.adapters.render import render_children
from specdecode.adapters.speculative_boundary import setting_of
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.domain.decision import DesiredChildren
from specdecode.domain.observations import ChildRole

pytestmark = pytest.mark.unit


def rendered(shadows: bool = True) -> list[dict[str, Any]]:
    spec = SpecDecodeRolloutSpec.model_validate(raw_spec(EAGLE3))
    desired = DesiredChildren(
        production=None, shadows=shadows, baseline=None, candidate=setting_of(EAGLE3)
    )
    return render_children(NAME, NAMESPACE, UID, spec, desired)


@pytest.mark.parametrize(
    ("observed", "desired", "expected"),
    [
        ({"a": 1, "defaulted": "x"}, {"a": 1}, True),
        ({"b": 1}, {"a": 1}, False),
        ([{"a": 1, "extra": 2}], [{"a": 1}], True),
        ([{"a": 1}, {"a": 2}], [{"a": 1}], False),
        ("1", 1, True),  # the API server stores quantities as strings
        ("1", "1000m", True),
        ("16Gi", "17179869184", True),
        ("2", 1, False),
        ("true", True, False),
        (True, True, True),
        (None, None, True),
        ("set by hand", None, False),
        (None, "x", False),
    ],
)
def test_covers(observed: Any, desired: Any, expected: bool) -> None:
    assert covers(observed, desired) is expected


def test_children_as_the_server_returns_them_are_not_stale() -> None:
    objects = rendered()
    assert stale_objects(objects, [server_copy(o) for o in objects]) == []


def test_absent_or_drifted_children_are_stale() -> None:
    objects = rendered()
    stored = [server_copy(o) for o in objects]
    drifted = copy.deepcopy(stored[0])
    drifted["spec"]["replicas"] = 5  # scaled by hand
    changed_image = copy.deepcopy(stored[2])
    changed_image["spec"]["template"]["spec"]["containers"][0]["image"] = "other:1"
    observed = [drifted, stored[1], changed_image, *stored[3:5]]  # candidate Service missing
    stale = {(o["kind"], o["metadata"]["name"]) for o in stale_objects(objects, observed)}
    assert stale == {
        ("Deployment", NAME),
        ("Deployment", f"{NAME}-baseline"),
        ("Service", f"{NAME}-candidate"),
    }


def test_only_present_shadows_are_deleted() -> None:
    cluster = FakeCluster()
    cluster.store_all(rendered())
    deployments = cluster.view.rollout_deployments(NAMESPACE, NAME)
    services = cluster.view.rollout_services(NAMESPACE, NAME)
    assert sorted(shadows_to_delete(NAME, deployments, services)) == [
        ("Deployment", f"{NAME}-baseline"),
        ("Deployment", f"{NAME}-candidate"),
        ("Service", f"{NAME}-baseline"),
        ("Service", f"{NAME}-candidate"),
    ]
    going = [copy.deepcopy(d) for d in deployments]
    for deployment in going:
        deployment["metadata"]["deletionTimestamp"] = "2026-01-01T12:00:00Z"
    only_production = [o for o in services if o["metadata"]["name"] == NAME]
    assert shadows_to_delete(NAME, going, only_production) == []


def pod(role: str, fingerprint: str | None, **status: Any) -> dict[str, Any]:
    labels = {"specdecode.io/rollout": NAME, "specdecode.io/role": role}
    if fingerprint is not None:
        labels["specdecode.io/config"] = fingerprint
    return {"metadata": {"name": f"{role}-pod", "labels": labels}, "status": status}


def test_observed_children_carry_readiness_and_reasons() -> None:
    objects = rendered()
    production, baseline, candidate = (server_copy(objects[i]) for i in (0, 2, 4))
    baseline["metadata"]["generation"] = 2  # not yet observed by the controller
    candidate["status"]["readyReplicas"] = 0
    fingerprint = candidate["spec"]["template"]["metadata"]["labels"]["specdecode.io/config"]
    crash = {
        "name": "vllm",
        "restartCount": 4,
        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        "lastState": {"terminated": {"exitCode": 1, "message": "CUDA out of memory"}},
    }
    unscheduled = {"type": "PodScheduled", "status": "False", "message": "0/3 nodes: gpu"}
    pods = [
        pod("candidate", fingerprint, containerStatuses=[crash]),
        pod("candidate", "an-older-config", conditions=[unscheduled]),  # ignored: old config
    ]
    states = observe_children([production, baseline, candidate], pods)
    assert states[ChildRole.PRODUCTION].ready
    assert not states[ChildRole.BASELINE].ready  # generation 2 not observed yet
    assert states[ChildRole.CANDIDATE].crash_reason is not None
    assert "CUDA out of memory" in (states[ChildRole.CANDIDATE].crash_reason or "")
    assert states[ChildRole.CANDIDATE].unschedulable_reason is None


def test_a_crash_is_named_by_its_error_line_not_the_start_of_its_log_tail() -> None:
    # the end of vLLM 0.32's log when a draft's max_model_len exceeds its config's
    cause = (
        "Value error, User-specified max_model_len (4096) is greater than the derived "
        "max_model_len (max_position_embeddings=2048.0 or model_max_length=None in model's "
        "config.json). [type=value_error, input_value=ArgsKwargs((), {...}), "
        "input_type=ArgsKwargs]"
    )
    tail = (
        "INFO 11-26 14:49:01 [utils.py:1] non-default args: {'model': '/models/target'}\n"
        "Traceback (most recent call last):\n"
        '  File "vllm/config/speculative.py", line 1402, in __post_init__\n'
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
        f"  {cause}\n"
        "    For further information visit https://errors.pydantic.dev/2.12/v/value_error\n"
    )
    assert error_line(tail) == cause
    assert error_line("RuntimeError: CUDA out of memory") == "RuntimeError: CUDA out of memory"
    assert error_line("killed\nno cause here") is None
