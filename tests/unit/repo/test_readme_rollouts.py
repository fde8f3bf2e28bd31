"""The rollouts the README shows are ones the API admits: a reader who copies one gets a
resource, not a refusal (the models are the API's rules; the CRD is generated from them).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from specdecode.api.rollout import SpecDecodeRolloutSpec, WrittenRolloutSpec

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]


def readme_rollouts() -> dict[str, dict[str, Any]]:
    """Each ```yaml block of the README that is a SpecDecodeRollout, by its name."""
    blocks = re.findall(r"^```yaml\n(.*?)^```", (REPO / "README.md").read_text(), re.M | re.S)
    documents = [yaml.safe_load(block) for block in blocks]
    return {
        document["metadata"]["name"]: document
        for document in documents
        if isinstance(document, dict) and document.get("kind") == "SpecDecodeRollout"
    }


def test_the_readme_shows_the_minimal_and_the_adoption_rollout() -> None:
    assert set(readme_rollouts()) == {"llama-8b", "chat-eagle3"}


def test_the_minimal_rollout_is_admitted() -> None:
    SpecDecodeRolloutSpec.model_validate(readme_rollouts()["llama-8b"]["spec"])


def test_the_four_line_adoption_is_admitted() -> None:
    """Admitted as written: with a workloadRef, model and engine are read from the source."""
    WrittenRolloutSpec.model_validate(readme_rollouts()["chat-eagle3"]["spec"])


def test_without_a_workload_ref_the_four_lines_are_refused() -> None:
    """The control: the same lines without the reference lack what only a source can give."""
    spec = dict(readme_rollouts()["chat-eagle3"]["spec"])
    del spec["workloadRef"]
    with pytest.raises(ValueError, match="model"):
        WrittenRolloutSpec.model_validate(spec)
