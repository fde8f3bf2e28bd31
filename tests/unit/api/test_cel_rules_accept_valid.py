"""The other half of the invalid table: valid variations near each CEL rule's boundary are
accepted by both the models and the CRD (a rule that over-refuses breaks users' applies)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from sdr_crd_checker import CrdChecker

from localcluster.manifests import REPO as REPO_ROOT
from localcluster.manifests import merged as merge_patch
from specdecode.api import SpecDecodeRollout
from specdecode.api.analysis import default_stages
from specdecode.api.vllm_versions import METHODS, NEVER_STARTS
from specdecode.tools.crdgen import output_paths

pytestmark = pytest.mark.unit

BASE = yaml.safe_load((REPO_ROOT / "examples/simulator/specdecode-rollout.yaml").read_text())

# Every stage needs an enforced gate (fail closed); variations about other fields carry this one.
ERRORS = [{"name": "errors", "type": "ErrorRate"}]
VALID_PATCHES: dict[str, dict[str, Any]] = {
    "plain-decoding": {"spec": {"speculative": None}},
    "ngram-lookup-equal": {
        "spec": {
            "speculative": {
                "method": "ngram",
                "model": None,
                "prompt_lookup_min": 3,
                "prompt_lookup_max": 3,
            }
        }
    },
    "suffix-with-options": {
        "spec": {
            "speculative": {
                "method": "suffix",
                "model": None,
                "suffix_decoding_max_tree_depth": 24,
                "suffix_decoding_max_cached_requests": 0,
                "suffix_decoding_max_spec_factor": 1.0,
                "suffix_decoding_min_token_prob": 0.1,
            }
        }
    },
    "mtp-without-model": {"spec": {"speculative": {"method": "mtp", "model": None}}},
    "draft-tp-equals-target": {
        "spec": {
            "gpuPool": {"gpusPerReplica": 4, "tensorParallelSize": 4},
            "speculative": {"draft_tensor_parallel_size": 4},
        }
    },
    "draft-tp-one": {
        "spec": {
            "gpuPool": {"gpusPerReplica": 2, "tensorParallelSize": 2},
            "speculative": {"draft_tensor_parallel_size": 1},
        }
    },
    "draft-len-equals-target": {"spec": {"speculative": {"max_model_len": 8192}}},
    "draft-len-without-target-len": {
        "spec": {"model": {"maxModelLen": None}, "speculative": {"max_model_len": 4096}}
    },
    "request-rate-stage": {
        "spec": {"analysis": {"stages": [{"name": "open", "requestRate": 2.5, "gates": ERRORS}]}}
    },
    "min-equals-max-duration": {
        "spec": {
            "analysis": {
                "stages": [
                    {
                        "name": "s",
                        "concurrency": 1,
                        "minDurationSeconds": 60,
                        "maxDurationSeconds": 60,
                        "gates": ERRORS,
                    }
                ]
            }
        }
    },
    "every-gate-type-with-its-fields": {
        "spec": {
            "analysis": {
                "stages": [
                    {
                        "name": "all-gates",
                        "concurrency": 8,
                        "gates": [
                            {
                                "name": "a",
                                "type": "Acceptance",
                                "minAlpha": 0.5,
                                "minDraftTokens": 100,
                            },
                            {
                                "name": "t",
                                "type": "TailLatency",
                                "quantile": 0.95,
                                "tolerance": 0.2,
                                "itlDefinition": "PerChunk",
                                "minSamples": 50,
                            },
                            {
                                "name": "s",
                                "type": "Speedup",
                                "speedupMetric": "Throughput",
                                "minSpeedup": 1.1,
                                "minSamples": 10,
                            },
                            {
                                "name": "e",
                                "type": "ErrorRate",
                                "maxErrorRate": 0.01,
                                "minSamples": 10,
                            },
                        ],
                    }
                ]
            }
        }
    },
    "mirror-with-route": {
        "spec": {
            "analysis": {
                "traffic": {"source": "Mirror", "httpRoute": "llm"},
                "stages": [
                    {"name": "acceptance", "gates": [{"name": "alpha", "type": "Acceptance"}]},
                    {
                        "name": "tail",
                        "concurrency": 8,
                        "gates": [
                            {"name": "itl", "type": "TailLatency", "itlDefinition": "ServerStep"},
                            {"name": "errors", "type": "ErrorRate"},
                        ],
                    },
                ],
            }
        }
    },
    "mirror-with-default-stages": {
        "spec": {"analysis": {"traffic": {"source": "Mirror", "httpRoute": "llm"}, "stages": None}}
    },
    "server-step-itl-with-prompts": {
        "spec": {
            "analysis": {
                "stages": [
                    {
                        "name": "tail",
                        "concurrency": 8,
                        "gates": [
                            {"name": "itl", "type": "TailLatency", "itlDefinition": "ServerStep"},
                            {"name": "errors", "type": "ErrorRate"},
                        ],
                    }
                ]
            }
        }
    },
    "prompts-from-secret": {
        "spec": {"analysis": {"traffic": {"secretRef": {"name": "p", "key": "chat.jsonl"}}}}
    },
    "harmless-extra-args": {
        "spec": {
            "model": {"extraArgs": ["--enable-prefix-caching", "--max-num-seqs=256", "--seed"]}
        }
    },
    "name-of-53-characters": {"metadata": {"name": "a" * 53}},
    # Turning speculation off through Git: the default stages judge plain decoding ("none"
    # in the method-neutral gates' methods) on the tail and the speedup.
    "plain-decoding-default-stages": {
        "spec": {
            "speculative": None,
            "analysis": {"stages": [stage.to_wire() for stage in default_stages()]},
        }
    },
    "plain-decoding-gate-named-none": {
        "spec": {
            "speculative": None,
            "analysis": {
                "stages": [
                    {
                        "name": "s",
                        "concurrency": 4,
                        "gates": [{"name": "p99", "type": "TailLatency", "methods": ["none"]}],
                    }
                ]
            },
        }
    },
    "fail-only-gross-check-beside-an-enforced-gate": {
        "spec": {
            "analysis": {
                "stages": [
                    {
                        "name": "s",
                        "concurrency": 4,
                        "gates": [
                            {"name": "alpha", "type": "Acceptance"},
                            {
                                "name": "e",
                                "type": "ErrorRate",
                                "maxErrorRate": 0.1,
                                "failOnly": True,
                                "dryRun": False,
                            },
                        ],
                    }
                ]
            }
        }
    },
    # Fail closed refuses stages that judge nothing, but a manual analysis is judged by a
    # person: a gateless stage (a live canary watched by hand) stays valid there.
    "manual-stage-without-gates": {
        "spec": {
            "analysis": {
                "manual": True,
                "stages": [{"name": "canary", "concurrency": 2, "liveCanary": True, "gates": []}],
            }
        }
    },
}


def _default_stages_for(method: str, needs_model: bool | None, mirror: bool) -> dict[str, Any]:
    """`method` on 0.32.0 (the last release with every method) under the default stages."""
    stages = [stage.to_wire() for stage in default_stages()]
    analysis: dict[str, Any] = {"stages": stages}
    if mirror:
        analysis["traffic"] = {"source": "Mirror", "httpRoute": "llm"}
        for stage in stages:
            stage.pop("concurrency")
    speculative = {"method": method, "model": "org/draft" if needs_model else None}
    return {
        "spec": {
            "engine": {"image": "vllm/vllm-openai:v0.32.0"},
            "speculative": speculative,
            "analysis": analysis,
        }
    }


# The default stages are admitted for every method, with Prompts and with Mirror traffic:
# each stage has an enforced gate that applies (issue 22: medusa, ngram_gpu, dflash, dspark
# and mlp_speculator had none in the first stage).
VALID_PATCHES.update(
    {
        f"default-stages-{method}-{'mirror' if mirror else 'prompts'}": _default_stages_for(
            method, facts.needs_model, mirror
        )
        for method, facts in METHODS.items()
        if method not in NEVER_STARTS  # refused in every release (its own test)
        for mirror in (False, True)
    }
)


@pytest.fixture(scope="module")
def checker() -> CrdChecker:
    crd = yaml.safe_load(output_paths(REPO_ROOT)[0].read_text())
    return CrdChecker(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])


@pytest.mark.parametrize("name", sorted(VALID_PATCHES))
def test_valid_variation_is_accepted(name: str, checker: CrdChecker) -> None:
    obj = merge_patch(BASE, VALID_PATCHES[name])
    SpecDecodeRollout.model_validate(obj)
    assert checker.errors(obj) == []
