"""Engine pods carry the vLLM release the config was validated against, chosen from the
explicit field, then the image tag, then the pin; a user cannot override it by env."""

from __future__ import annotations

import pytest
from render_cases import example_spec

from specdecode.adapters.engine_pod import VLLM_VERSION_ENV, engine_env
from specdecode.api.vllm_versions import PINNED_VLLM_VERSION

pytestmark = pytest.mark.unit


def _version_env(image: str, explicit: str | None, user_env: list[dict[str, str]]) -> list[str]:
    spec = example_spec("examples/methods/ngram.yaml")
    engine = spec.engine.model_copy(
        update={"image": image, "vllm_version": explicit, "env": user_env}
    )
    env = engine_env(spec.model_copy(update={"engine": engine}))
    return [item["value"] for item in env if item["name"] == VLLM_VERSION_ENV]


@pytest.mark.parametrize(
    ("image", "explicit", "expected"),
    [
        ("vllm/vllm-openai:v0.20.2", None, "0.20.2"),
        ("vllm/vllm-openai:v0.20.2-cu128", None, "0.20.2"),
        ("vllm/vllm-openai:v0.20.2", "0.21.0", "0.21.0"),
        ("registry.local:5000/team/vllm:nightly", None, PINNED_VLLM_VERSION),
        ("team/vllm:1.4.0", None, PINNED_VLLM_VERSION),  # not a vLLM `v0.Y.Z` tag
    ],
)
def test_the_release_comes_from_field_then_tag_then_pin(
    image: str, explicit: str | None, expected: str
) -> None:
    assert _version_env(image, explicit, []) == [expected]


def test_user_env_cannot_claim_another_release() -> None:
    user = [{"name": VLLM_VERSION_ENV, "value": "0.11.2"}, {"name": "A", "value": "1"}]
    assert _version_env("vllm/vllm-openai:v0.33.0", None, user) == ["0.33.0"]
