"""Bad input, end to end: refused at the earliest point that can tell, and never fatal.

The shared table (tests/data/invalid-rollouts.yaml) goes through the built kubectl to the
real API server, which must refuse each resource naming the field. What only the operator
can see (a prompt set that is missing or malformed) becomes phase Failed with a Degraded
condition and a Warning Event, while the operator keeps reconciling other rollouts.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import yaml

from localcluster.apiserver_errors import names_field
from localcluster.handle import LocalCluster
from localcluster.manifests import REPO, load_example, load_invalid_cases, merged
from localcluster.operator_process import install_crds
from localcluster.rollouts import Rollout
from specdecode.api.engine_flag_classes import FlagClass
from specdecode.api.engine_flag_table import TABLES

pytestmark = pytest.mark.e2e

API_SERVER_CASES = [c for c in load_invalid_cases() if c.rejected_by == "apiserver"]
# extraArgs spellings and the vLLM destination each sets (null: none the operator reserves);
# the unit tests check the same table against the models, the CRD offline and vLLM's parser.
SPELLINGS = yaml.safe_load((REPO / "tests/data/engine-arg-spellings.yaml").read_text())["cases"]
MANUAL = {"spec": {"analysis": {"manual": True}}}


def releases_of_reserved_options() -> dict[tuple[str, str], list[str]]:
    """(option string, destination) of every non-free destination in the flag table of
    every recorded release (operator/specdecode/api/engine_flags/) -> the releases that
    have it: `--speculative-config` of all, `--spec-method` and `--grpc` of the late ones."""
    found: dict[tuple[str, str], list[str]] = {}
    for release, flags in TABLES.items():
        for flag in flags:
            if flag.flag_class is not FlagClass.FREE:
                for option in flag.options:
                    found.setdefault((option, flag.dest), []).append(release)
    return found


def spellings_of(option: str) -> list[list[str]]:
    """Two ways vLLM reads an option string: `--a-b x` and `--a_b=x` (`-tp x`, `-tp=x`)."""
    attached = "--" + option[2:].replace("-", "_") if option.startswith("--") else option
    return [[option, "x"], [f"{attached}=x"]]


RELEASES_OF = releases_of_reserved_options()
# The same shape as SPELLINGS' cases (the value is never read: any argument naming the
# option is refused).
TABLE_SPELLINGS = [
    {"args": args, "sets": dest} for option, dest in RELEASES_OF for args in spellings_of(option)
]


def test_the_table_covers_at_least_25_cases() -> None:
    assert len(API_SERVER_CASES) >= 25


def test_every_invalid_resource_is_refused_naming_its_field(
    cluster: LocalCluster, namespace: str, operator: object
) -> None:
    """One namespace, every case: kubectl apply must fail and name the offending field by
    its path, not merely mention its last segment (see localcluster.apiserver_errors)."""
    misses = []
    for index, case in enumerate(API_SERVER_CASES):
        own_name = case.field.startswith("metadata.name")  # the name itself is what's bad
        metadata = {"namespace": namespace} if own_name else {"name": f"bad-{index}"}
        body = merged(case.obj, {"metadata": {**metadata, "namespace": namespace}})
        result = cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(body))
        named = names_field(result.stderr, case.field, case.server_message)
        if result.returncode == 0 or not named:
            misses.append(f"{case.name}: rc={result.returncode} {result.stderr.strip()[:300]}")
    assert not misses, "\n".join(misses)
    listed = cluster.kubectl("get", "sdr", "-n", namespace, "-o", "name", check=True)
    assert listed.stdout.strip() == ""


def test_every_reserved_extra_args_spelling_is_refused_and_allowed_ones_are_not(
    cluster: LocalCluster, namespace: str
) -> None:
    """The API server's CEL reads extraArgs as vLLM does: each reserved spelling (dashes or
    underscores, =value, dotted keys, short options, prefixes, --config) and every option
    string of a reserved destination in any recorded release's flag table is refused naming
    spec.model.extraArgs and the destination; each allowed one is accepted (server-side dry
    run: admission runs in full, nothing is stored for the operator to start)."""
    install_crds(cluster)  # the CRD alone (idempotent): run by itself, no test installed it
    assert sum(1 for case in SPELLINGS if case["sets"]) >= 20
    assert len(TABLE_SPELLINGS) >= 30 and len(TABLES) >= 23
    # Drawn from every release, not one: some options exist in only some releases.
    assert any(len(releases) < len(TABLES) for releases in RELEASES_OF.values())
    misses = []
    for index, case in enumerate(SPELLINGS + TABLE_SPELLINGS):
        body = merged(
            load_example(),
            {
                "metadata": {"name": f"args-{index}", "namespace": namespace},
                "spec": {"model": {"extraArgs": case["args"]}},
            },
        )
        result = cluster.kubectl("apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump(body))
        if case["sets"] is None:
            refused_right = result.returncode == 0
        else:
            message = f"model.extraArgs must not set vLLM's {case['sets']} "
            refused_right = result.returncode != 0 and names_field(
                result.stderr, "spec.model.extraArgs", message
            )
        if not refused_right:
            misses.append(f"{case['args']}: rc={result.returncode} {result.stderr.strip()[:300]}")
    assert not misses, "\n".join(misses)
    listed = cluster.kubectl("get", "sdr", "-n", namespace, "-o", "name", check=True)
    assert listed.stdout.strip() == ""


def test_a_missing_prompt_set_fails_only_that_rollout(
    rollout: Callable[[str], Rollout], cluster: LocalCluster
) -> None:
    broken, healthy = rollout("broken"), rollout("healthy")
    refs = {
        "spec": {
            "analysis": {"traffic": {"configMapRef": {"name": "prompts", "key": "prompts.jsonl"}}}
        }
    }
    broken.apply(merged(load_example(), refs))
    healthy.apply(merged(load_example(), MANUAL))

    status = broken.wait_phase("Failed", timeout=240)
    degraded = next(c for c in status["conditions"] if c["type"] == "Degraded")
    assert degraded["status"] == "True" and degraded["reason"] == "TrafficSourceInvalid"
    assert f"ConfigMap {broken.namespace}/prompts does not exist" in status["message"]
    assert any(
        e["type"] == "Warning" and e["reason"] == "TrafficSourceInvalid" for e in broken.events()
    )
    assert broken.status().get("stableSpeculative") is None
    healthy.wait_phase("Analyzing", timeout=240)

    # Fixing the input and asking again recovers: a malformed line is named, then fixed.
    cluster.kubectl(
        "create",
        "configmap",
        "prompts",
        "-n",
        broken.namespace,
        "--from-literal=prompts.jsonl=" + '{"prompt": "hi"}\n{"prompt": ""}',
        check=True,
    )
    broken.annotate("retry")
    status = broken.wait(
        lambda s: s if s.get("phase") == "Failed" and "line 2" in s.get("message", "") else None,
        timeout=240,
        message="Failed naming line 2 of the prompt set",
    )
    assert "text must be a non-empty string" in status["message"]
