"""The Patch strategy's writes: the candidate applied while Promoting, never re-sent at a
refused generation, and a source still holding our apply after an analysis that did not
promote returned to the stable config (re-applied, or withdrawn when none of its args
were the owner's)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from specdecode.adapters.kube.findings import Found
from specdecode.adapters.process_caches import WriteEcho
from specdecode.adapters.speculative_boundary import setting_of
from specdecode.api import Phase, SpecDecodeRolloutSpec
from specdecode.api.engine_args import without_speculative
from specdecode.api.speculative import SpeculativeConfig
from specdecode.domain.observations import ChildState
from specdecode.domain.rollout_state import RolloutState
from specdecode.domain.source import SourceObservation
from specdecode.reconciler import promotion_patch
from specdecode.reconciler.promotion_patch import with_patch_conflict
from specdecode.reconciler.workload import Source

pytestmark = pytest.mark.unit

EAGLE3 = SpeculativeConfig(
    method="eagle3", model="yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", num_speculative_tokens=3
)
SPEC = SpecDecodeRolloutSpec.model_validate(
    {
        "model": {"name": "m"},
        "engine": {"image": "vllm/vllm-openai:v0.33.0"},
        "speculative": EAGLE3.to_wire(),
        "analysis": {"manual": True},
        "workloadRef": {"name": "chat"},
        "promotion": {"strategy": "Patch"},
    }
)


class Calls:
    def __init__(self, conflict: str | None = None) -> None:
        self.applied: list[list[str]] = []
        self.withdrawn = 0
        self.conflict = conflict

    def apply(
        self, kube: Any, ns: str, name: str, container: str, args: list[str], m: str
    ) -> str | None:
        assert (ns, name, container, m) == ("ns", "chat", "vllm", "specdecode-operator-promotion")
        self.applied.append(args)
        return self.conflict

    def withdraw(self, kube: Any, ns: str, name: str, m: str) -> None:
        self.withdrawn += 1


def run(
    monkeypatch: pytest.MonkeyPatch,
    status: RolloutState,
    runs: SpeculativeConfig | None,
    args: tuple[str, ...],
    owned: bool,
    calls: Calls,
    runtime: Any = None,
    generation: int = 1,
) -> Any:
    monkeypatch.setattr(promotion_patch, "apply_promotion", calls.apply)
    monkeypatch.setattr(promotion_patch, "withdraw_promotion", calls.withdraw)
    runtime = runtime or SimpleNamespace(
        kube=None, settings=SimpleNamespace(field_manager="specdecode-operator")
    )
    observed = SourceObservation(
        "Deployment/chat",
        state=ChildState(exists=True),
        speculative=setting_of(runs),
        base_args=tuple(without_speculative(args)),  # as `observe_source` leaves them
        promotion_applied=owned,
    )
    source = Source(observed, {}, generation=generation)
    found = Found()
    asyncio.run(promotion_patch.patch_source(runtime, "ns/r", SPEC, status, source, found))
    return found


def status(phase: Phase, stable: SpeculativeConfig | None = None) -> RolloutState:
    return RolloutState(
        phase=phase,
        candidate_speculative=setting_of(EAGLE3),
        candidate_fingerprint=EAGLE3.fingerprint(),
        stable_speculative=setting_of(stable),
        stable_fingerprint="none" if stable is None else stable.fingerprint(),
    )


def test_promoting_applies_the_candidate_and_a_refusal_is_not_resent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The refusal is kept in status (`applyFindings`), not in the operator's memory: each
    run here has a fresh runtime (a restarted operator) and reads only the status the
    previous one stored. Control: with the refusal kept in memory, the second run re-sent."""
    calls = Calls(conflict='conflict with "kubectl-client-side-apply"')
    found = run(monkeypatch, status(Phase.PROMOTING), None, ("m", "--port", "8000"), False, calls)
    assert calls.applied == [["m", "--port", "8000", "--speculative-config", EAGLE3.to_cli_json()]]
    findings = found.merged(None)
    assert findings is not None and findings.patch_refused_generation == 1
    assert findings.patch_refused.startswith("conflict with")
    stored = status(Phase.PROMOTING).model_copy(update={"apply_findings": findings})
    run(monkeypatch, stored, None, ("m",), False, calls)
    assert len(calls.applied) == 1, "re-sent at the generation it was refused at"
    run(monkeypatch, stored, None, ("m",), False, calls, generation=2)
    assert len(calls.applied) == 2, "the source changed: worth another try"


def test_a_stored_refusal_is_degraded_while_promoting_and_forgotten_with_the_transition() -> None:
    """Degraded PatchConflict comes from status alone (a restart shows it at once); once
    the phase moves on, the transition's own write drops the refusal."""
    from specdecode.api.status_findings import ApplyFindings
    from specdecode.domain.decision import Decision, DesiredChildren

    refused = ApplyFindings(patch_refused="conflict", patch_refused_generation=3)
    old = status(Phase.PROMOTING).model_copy(update={"apply_findings": refused})
    now = datetime(2026, 1, 1, tzinfo=UTC)
    shown = with_patch_conflict(old, Decision(old, DesiredChildren(None)), now)
    degraded = [c for c in shown.status.conditions if c.type == "Degraded"]
    assert degraded and degraded[0].reason == "PatchConflict"
    promoted = old.model_copy(update={"phase": Phase.PROMOTED})
    after = with_patch_conflict(old, Decision(promoted, DesiredChildren(None)), now)
    assert after.status.apply_findings is None
    assert not [c for c in after.status.conditions if c.type == "Degraded"]


def test_an_ended_analysis_returns_our_apply_to_the_stable_config(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ours = ("--speculative-config", EAGLE3.to_cli_json())
    withdrawn = Calls()
    run(monkeypatch, status(Phase.ROLLED_BACK), EAGLE3, ours, True, withdrawn)
    assert (withdrawn.applied, withdrawn.withdrawn) == ([], 1)  # nothing of the owner's in args
    ngram = SpeculativeConfig(method="ngram", num_speculative_tokens=4, prompt_lookup_max=4)
    reapplied = Calls()
    run(monkeypatch, status(Phase.ROLLED_BACK, stable=ngram), EAGLE3, ("m", *ours), True, reapplied)
    assert reapplied.applied == [["m", "--speculative-config", ngram.to_cli_json()]]
    untouched = Calls()
    run(monkeypatch, status(Phase.ROLLED_BACK), EAGLE3, ours, False, untouched)  # not ours
    assert (untouched.applied, untouched.withdrawn) == ([], 0)


def test_the_promotion_files_are_written_once_per_patch_and_never_over_a_foreign_object(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from specdecode.adapters.kube.owned import ForeignObject
    from specdecode.api.adoption import WorkloadStatus
    from specdecode.reconciler.apply import RolloutRef

    written: list[dict[str, str]] = []
    foreign: list[ForeignObject | None] = [None]

    def keep(kube: Any, owner: Any, files: dict[str, str], manager: str) -> Any:
        written.append(files)
        return foreign[0]

    monkeypatch.setattr(promotion_patch, "keep_promotion_files", keep)
    runtime: Any = SimpleNamespace(
        kube=None,
        settings=SimpleNamespace(field_manager="specdecode-operator"),
        write_echo=WriteEcho(),
    )
    ref = RolloutRef("ns", "r", "uid", 1)
    patch = '{"spec": {"template": {"spec": {"containers": []}}}}'
    done = status(Phase.PROMOTING).model_copy(
        update={"workload": WorkloadStatus(source="Deployment/chat", owner_patch=patch)}
    )
    for _ in range(3):  # what observe hands in: the cluster's copy as this process knows it
        standing = runtime.write_echo.promotion_files.get(ref.key)
        asyncio.run(promotion_patch.keep_files(runtime, ref, SPEC, done, standing, Found()))
    assert len(written) == 1 and written[0]["strategic-merge-patch.json"] == patch
    assert "kustomize-patch.yaml" in written[0]
    foreign[0] = ForeignObject("ConfigMap", "ns", "r-promotion")
    runtime.write_echo.promotion_files.clear()
    found = Found()
    asyncio.run(promotion_patch.keep_files(runtime, ref, SPEC, done, None, found))
    findings = found.merged(None)
    assert findings is not None and findings.not_owned_promotion_files is not None
    assert "ConfigMap ns/r-promotion already exists" in findings.not_owned_promotion_files
    assert "ns/r" not in runtime.write_echo.promotion_files  # tried again until it is free
