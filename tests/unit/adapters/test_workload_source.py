"""A source Deployment read as production, and its shadows rendered as copies of it.

Labels are routing: every label a Service selects the source's pods by, and the source's
own selector, is dropped from the shadows, which must then be selected by no Service.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from specdecode.adapters.render import Owner
from specdecode.adapters.render_adopted import render_adopted_shadows
from specdecode.adapters.source_facts import source_facts
from specdecode.adapters.speculative_boundary import setting_of
from specdecode.adapters.workload_source import observe_source, selects
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.api.speculative import SpeculativeConfig
from specdecode.domain.decision import DesiredChildren
from specdecode.reconciler.source_boundary import resolve_spec

pytestmark = pytest.mark.unit

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
IMAGE = "vllm/vllm-openai:v0.11.2"
NGRAM = SpeculativeConfig(method="ngram", num_speculative_tokens=4, prompt_lookup_max=4)
EAGLE3 = SpeculativeConfig(
    method="eagle3", model="yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", num_speculative_tokens=3
)
POD_LABELS = {"app": "chat", "tier": "llm", "team": "ml"}


def spec(**workload: Any) -> SpecDecodeRolloutSpec:
    return SpecDecodeRolloutSpec.model_validate(
        {
            "model": {"name": MODEL},
            "engine": {"image": IMAGE},
            "speculative": EAGLE3.to_wire(),
            "analysis": {"manual": True},
            "workloadRef": {"name": "chat", **workload},
        }
    )


def deployment(args: list[str] | None = None, containers: list[Any] | None = None) -> Any:
    vllm = {
        "name": "vllm",
        "image": IMAGE,
        "command": ["vllm", "serve"],
        "args": args if args is not None else [MODEL, "--port", "8000", "--max-num-seqs", "64"],
        "volumeMounts": [{"name": "weights", "mountPath": "/models"}],
    }
    return {
        "metadata": {"name": "chat", "generation": 3},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "chat"}},
            "template": {
                "metadata": {"labels": dict(POD_LABELS), "creationTimestamp": None},
                "spec": {
                    "containers": containers or [vllm],
                    "volumes": [{"name": "weights", "persistentVolumeClaim": {"claimName": "w"}}],
                },
            },
        },
        "status": {"observedGeneration": 3, "readyReplicas": 2, "updatedReplicas": 2},
    }


def service(name: str, selector: dict[str, str]) -> Any:
    return {"metadata": {"name": name}, "spec": {"selector": selector}}


SERVICES = [service("chat", {"app": "chat"}), service("llm", {"tier": "llm", "app": "chat"})]


def test_source_labels_are_dropped_but_the_kept_ones_and_no_service_selects_a_shadow() -> None:
    services = [*SERVICES, service("other", {"app": "x"})]
    source = observe_source("chat-eagle", spec(keepLabels=["team"]), deployment(), services)
    assert source.problem is None
    assert source.dropped_labels == ("app", "tier")
    assert source.state.ready and source.state.desired_replicas == 2
    owner = Owner("chat-eagle", "ns", "uid-1")
    desired = DesiredChildren(
        production=None, baseline=None, candidate=setting_of(EAGLE3), shadows=True
    )
    children = render_adopted_shadows(
        owner, spec(), desired, source, deployment()["spec"]["template"]
    )
    shadows = [c for c in children if c["kind"] == "Deployment"]
    assert [d["metadata"]["name"] for d in shadows] == [
        "chat-eagle-baseline",
        "chat-eagle-candidate",
    ]
    for shadow in shadows:
        labels = shadow["spec"]["template"]["metadata"]["labels"]
        assert "app" not in labels and "tier" not in labels and labels["team"] == "ml"
        assert not any(selects(s["spec"]["selector"], labels) for s in SERVICES)
        assert shadow["spec"]["replicas"] == 1
        assert shadow["spec"]["template"]["spec"]["volumes"][0]["name"] == "weights"
        assert "creationTimestamp" not in shadow["spec"]["template"]["metadata"]
    baseline_args = shadows[0]["spec"]["template"]["spec"]["containers"][0]["args"]
    candidate_args = shadows[1]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert baseline_args == [MODEL, "--port", "8000", "--max-num-seqs", "64"]
    assert candidate_args == [*baseline_args, "--speculative-config", EAGLE3.to_cli_json()]


def test_the_source_template_is_never_modified() -> None:
    source_deployment = deployment()
    before = copy.deepcopy(source_deployment)
    source = observe_source("chat-eagle", spec(), source_deployment, SERVICES)
    desired = DesiredChildren(
        production=None, baseline=None, candidate=setting_of(EAGLE3), shadows=True
    )
    owner = Owner("r", "ns", "u")
    render_adopted_shadows(owner, spec(), desired, source, source_deployment["spec"]["template"])
    assert source_deployment == before


@pytest.mark.parametrize(
    "arg",
    [
        ["--speculative-config", NGRAM.to_cli_json()],
        ["--speculative_config", NGRAM.to_cli_json()],
        [f"--speculative-config={NGRAM.to_cli_json()}"],
        ["-sc", NGRAM.to_cli_json()],
    ],
)
def test_the_config_the_source_runs_is_read_in_any_spelling(arg: list[str]) -> None:
    source = observe_source(
        "chat-eagle", spec(), deployment([MODEL, "--port", "8000", *arg]), SERVICES
    )
    assert source.problem is None
    assert source.speculative == setting_of(NGRAM)
    assert source.base_args == (MODEL, "--port", "8000")  # every spelling dropped


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["other/model", "--port", "8000"], "spec.model.name"),
        ([MODEL, "--port", "9000"], "spec.engine.port"),
        ([MODEL, "--disable-log-stats"], "could not be judged"),
        ([MODEL, "--speculative-config.method", "ngram"], "only a JSON"),
        ([MODEL, "--grpc"], "could not be judged"),
        ([MODEL, "--ssl-certfile", "/tls/cert.pem"], "plain HTTP"),
    ],
)
def test_a_source_that_cannot_be_judged_says_why(args: list[str], problem: str) -> None:
    source = observe_source("chat-eagle", spec(), deployment(args), SERVICES)
    assert source.problem is not None and problem in source.problem


@pytest.mark.parametrize(
    "shorthand",
    [
        ["--spec-method", "ngram", "--spec-tokens", "4"],
        ["--spec_method=ngram"],
        ["--spec-tok", "3", "--speculative-config", NGRAM.to_cli_json()],
        ["--spec-model", "org/draft"],
        ["--spec", "ngram"],
    ],
)
def test_a_source_speculating_through_vllms_shorthands_is_never_read_as_plain_decoding(
    shorthand: list[str],
) -> None:
    """vLLM 0.32 merges --spec-method, --spec-model and --spec-tokens into the speculative
    config: such a production is refused naming the flags (it was read as plain decoding,
    or as the JSON config alone, before the flag table classified them)."""
    source = observe_source(
        "chat-eagle", spec(), deployment([MODEL, "--port", "8000", *shorthand]), SERVICES
    )
    assert source.problem is not None, source.speculative
    assert shorthand[0] in source.problem
    assert "write it as one JSON --speculative-config" in source.problem


def test_the_vllm_container_is_found_among_sidecars() -> None:
    sidecar = {"name": "proxy", "image": "envoy", "args": ["--config", "x"]}
    vllm = deployment()["spec"]["template"]["spec"]["containers"][0]
    source = observe_source("chat-eagle", spec(), deployment(containers=[sidecar, vllm]), SERVICES)
    assert source.problem is None and source.container == "vllm"
    missing = observe_source("chat-eagle", spec(container="engine"), deployment(), SERVICES)
    assert missing.problem is not None and "no container named 'engine'" in missing.problem
    absent = observe_source("chat-eagle", spec(), None, [])
    assert absent.problem == "Deployment/chat not found in the rollout's namespace"


def test_the_source_image_must_be_the_rollouts() -> None:
    other = deployment()
    other["spec"]["template"]["spec"]["containers"][0]["image"] = "vllm/vllm-openai:v0.12.0"
    source = observe_source("chat-eagle", spec(), other, SERVICES)
    assert source.problem is not None and "spec.engine.image" in source.problem


def test_without_keep_labels_every_source_label_is_dropped() -> None:
    source = observe_source("chat-eagle", spec(), deployment(), SERVICES)
    assert source.dropped_labels == ("app", "team", "tier")


@pytest.mark.parametrize(
    ("keep", "who"), [("app", "the source's selector"), ("tier", "Service llm")]
)
def test_a_kept_label_something_routes_by_is_refused(keep: str, who: str) -> None:
    source = observe_source("chat-eagle", spec(keepLabels=[keep]), deployment(), SERVICES)
    assert (
        source.problem == f"Deployment/chat: workloadRef.keepLabels: {keep} ({who} selects on it)"
    )


def test_a_service_that_would_select_a_shadow_stops_the_rendering() -> None:
    vllm = service("all-vllm", {"app.kubernetes.io/name": "vllm"})  # not on adopted shadows
    assert observe_source("chat-eagle", spec(), deployment(), [*SERVICES, vllm]).problem is None
    greedy = service("all-ours", {"app.kubernetes.io/managed-by": "specdecode-operator"})
    source = observe_source("chat-eagle", spec(), deployment(), [*SERVICES, greedy])
    assert source.problem == "Service all-ours would select the baseline shadow's pods"
    ours = service("chat-eagle-baseline", {"specdecode.io/rollout": "chat-eagle"})
    assert observe_source("chat-eagle", spec(), deployment(), [*SERVICES, ours]).problem is None


def test_a_source_mid_rollout_is_not_ready_while_old_pods_remain() -> None:
    rolling = deployment()
    rolling["spec"]["replicas"] = 1
    # The new pod counted as updated, the old one still ready: not done (kubectl agrees).
    rolling["status"] = {
        "observedGeneration": 3,
        "replicas": 2,
        "updatedReplicas": 1,
        "readyReplicas": 1,
    }
    assert not observe_source("r", spec(), rolling, SERVICES).state.ready
    rolling["status"] = {
        "observedGeneration": 3,
        "replicas": 1,
        "updatedReplicas": 1,
        "readyReplicas": 1,
    }
    assert observe_source("r", spec(), rolling, SERVICES).state.ready


@pytest.mark.parametrize("example", ["plain-deployment.yaml", "production-stack.yaml"])
def test_the_adoption_examples_render_shadows_no_service_of_theirs_selects(example: str) -> None:
    from pathlib import Path

    import yaml

    from specdecode.api import SpecDecodeRollout

    path = Path(__file__).parents[3] / "examples" / "adoption" / example
    documents = [d for d in yaml.safe_load_all(path.read_text()) if d]
    kinds = {d["kind"]: d for d in documents}
    rollout = SpecDecodeRollout.model_validate(kinds["SpecDecodeRollout"])
    assert rollout.spec.model is None and rollout.spec.engine is None  # read from the source
    assert rollout.spec.workload_ref is not None
    resolved = resolve_spec(
        rollout.spec, source_facts(kinds["Deployment"], rollout.spec.workload_ref)
    )
    assert isinstance(resolved, SpecDecodeRolloutSpec), resolved
    assert resolved.engine.effective_vllm_version == "0.33.0"
    services = [d for d in documents if d["kind"] == "Service"]
    source = observe_source("r", resolved, kinds["Deployment"], services)
    assert source.problem is None, source.problem
    desired = DesiredChildren(
        production=None, baseline=None, candidate=setting_of(EAGLE3), shadows=True
    )
    template = kinds["Deployment"]["spec"]["template"]
    children = render_adopted_shadows(
        Owner("r", "default", "u"), resolved, desired, source, template
    )
    for shadow in (c for c in children if c["kind"] == "Deployment"):
        pod = shadow["spec"]["template"]
        assert not any(selects(s["spec"]["selector"], pod["metadata"]["labels"]) for s in services)
        assert "hostname" not in pod["spec"] and "subdomain" not in pod["spec"]
    if example == "production-stack.yaml":  # router labels (environment, release) dropped too
        assert {"environment", "release"} <= set(source.dropped_labels)
        from specdecode.domain.adoption import owner_patch

        patch = json.loads(owner_patch(source, setting_of(EAGLE3)))
        args = patch["spec"]["template"]["spec"]["containers"][0]["args"]
        assert args == ["--speculative-config", EAGLE3.to_cli_json()]


def _with(change: Any) -> Any:
    source_deployment = deployment()
    change(source_deployment["spec"]["template"]["spec"])
    return source_deployment


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            lambda pod: pod["containers"][0].update(
                command=["vllm", "serve", "--speculative-config", NGRAM.to_cli_json()]
            ),
            "its vLLM command sets the speculative config",
        ),
        (lambda pod: pod["containers"][0]["args"].extend(["--api-key", "k"]), "API key"),
        (
            lambda pod: pod["containers"][0].update(env=[{"name": "VLLM_API_KEY", "value": "k"}]),
            "API key",
        ),
        (lambda pod: pod.update(hostNetwork=True), "host's network"),
        (
            lambda pod: pod["containers"][0].update(
                ports=[{"containerPort": 8000, "hostPort": 80}]
            ),
            "host's network or ports",
        ),
    ],
)
def test_sources_a_copy_could_not_judge_or_that_would_share_traffic(
    change: Any, problem: str
) -> None:
    source = observe_source("r", spec(), _with(change), SERVICES)
    assert source.problem is not None and problem in source.problem, source.problem


def test_the_served_name_the_load_pods_request_must_be_served() -> None:
    named = SpecDecodeRolloutSpec.model_validate(
        {**spec().to_wire(), "model": {"name": MODEL, "servedModelName": "llama-8b"}}
    )
    source = observe_source("r", named, deployment(), SERVICES)  # serves under MODEL
    assert source.problem == (
        f"Deployment/chat: spec.model.servedModelName is 'llama-8b' but the source runs '{MODEL}'"
    )


def test_a_source_scaled_to_zero_is_never_ready() -> None:
    idle = deployment()
    idle["spec"]["replicas"] = 0
    idle["status"] = {"observedGeneration": 3, "replicas": 0}
    assert not observe_source("r", spec(), idle, SERVICES).state.ready


def test_shadows_carry_no_traffic_registering_annotation_and_a_restart_stamp_changes_nothing() -> (
    None
):
    stamped = deployment()
    meta = stamped["spec"]["template"]["metadata"]
    meta["annotations"] = {
        "dapr.io/app-id": "chat",
        "kubectl.kubernetes.io/restartedAt": "now",
        "gke-gcsfuse/volumes": "true",
    }
    plain = observe_source("r", spec(), deployment(), SERVICES)
    source = observe_source("r", spec(), stamped, SERVICES)
    assert source.template_hash != plain.template_hash  # gcsfuse: the copies carry it
    restamped = copy.deepcopy(stamped)
    restamped["spec"]["template"]["metadata"]["annotations"][
        "kubectl.kubernetes.io/restartedAt"
    ] = "later"
    restamped["spec"]["template"]["metadata"]["annotations"]["dapr.io/app-id"] = "other"
    assert observe_source("r", spec(), restamped, SERVICES).template_hash == source.template_hash
    desired = DesiredChildren(
        production=None, baseline=None, candidate=setting_of(EAGLE3), shadows=True
    )
    shadows = render_adopted_shadows(
        Owner("r", "ns", "u"), spec(), desired, source, stamped["spec"]["template"]
    )
    annotations = shadows[0]["spec"]["template"]["metadata"]["annotations"]
    assert not any(key.startswith(("dapr.io", "kubectl.kubernetes.io")) for key in annotations)
    assert annotations["gke-gcsfuse/volumes"] == "true"  # the copy must mount what the source does
    assert "app.kubernetes.io/name" not in shadows[0]["spec"]["template"]["metadata"]["labels"]
