"""Published MoE speculative-decoding measurements, quoted with their sources (data only).

A row states model, hardware, tensor parallelism, batch size, method, k, the mean
acceptance length and both throughputs, each read in the source quoted beside it. `engine`
says whose implementation ran: the simulator emulates vLLM's chain verification, so only
vLLM chain rows fit `expert_reuse` (calibration_moe.py). A row that cannot judge the expert
model says why in `excluded`; it stays in the table, predicted and printed with its reason.

`DENSE_CONTROL`: dense Qwen3 rows of the same AngelSlim table (same H20, vLLM 0.11.2, k=2,
batch 1): what the step model gets right on that stack with no experts in play, so a miss
on the MoE rows is the expert model's, not the device profile's.

Read, not added (why):
- jinnpan.com/en/blog/eagle3-qwen3-benchmark (Qwen3-Coder-30B-A3B + EAGLE3, one H100,
  SGLang): the stored copy ends at its setup section ("2.1 Hardware and Softw..."); no
  figure of it could be read.
- SpecForge #339's other rows and AngelSlim issue #163 (SGLang, 4x H100): topk > 1 trees,
  not comparable with chain verification; #163's topk 3, steps 3, num_draft 4 row is a tree.
- AngelSlim's Qwen3-VL-30B-A3B rows: a vision-language model on image datasets (no profile).
- The issue's held-out pair (an MoE model with an EAGLE-3 head on one small device, a gain
  at one stream and a loss at eight): not found in this repository, its history, the shared
  references or the searchable pages and issues. The nearest published rows, TensorRT
  Edge-LLM's performance-benchmarks.md (v0.10.0 runtime dashboard, DGX Spark GB10 and Jetson
  AGX Thor, `llm_inference`, MTBench, chain MTP with --specDraftStep 3 --specVerifySize 4),
  have no Qwen3-30B-A3B speculative row (vanilla only); its MoE chain rows are
  Qwen3.6-35B-A3B NVFP4 MTP on GB10, 70.2 -> 102.3 tok/s at batch 1 (1.46x, accept 2.94) and
  216.4 -> 239.0 at batch 8 (1.10x, 2.89), and Nemotron-3.5-Lightning-30B-A3B NVFP4 MTP on
  GB10, 75.6 -> 93.2 (1.23x, 2.70) and 244.9 -> 185.0 (0.76x, accept falling to 1.82), on
  Thor 81.6 -> 95.3 (1.17x) and 236.0 -> 229.4 (0.97x, 2.69). Not added: another engine,
  4-bit weights beside the profile's one bytes-per-parameter, and architectures without a
  profile (Gated DeltaNet or Mamba layers beside the experts). What they show, speedup falling
  from batch 1 to 8 on this device class, the step model does not (calibration_moe.py).
- Red Hat's gpt-oss-120b EAGLE-3 on H200 (developers.redhat.com, 2026-04-16) and Fixstars'
  gpt-oss-120b EAGLE-3 on RTX PRO 6000 (blog.us.fixstars.com): no gpt-oss profile here; its
  MXFP4 experts beside BF16 attention do not fit the profile's one bytes-per-parameter, and
  RTX PRO 6000 has no device profile.
"""

from __future__ import annotations

from dataclasses import dataclass

from specdecode_sim.profiles import ModelProfile

VLLM = "vLLM"
SGLANG = "SGLang"


@dataclass(frozen=True)
class PublishedMoeRow:
    """One published measurement: the setup, both throughputs and where it was read."""

    label: str
    model: str
    gpu: str
    tp: int
    batch: int
    method: str
    k: int
    acceptance_length: float
    baseline_tok_s: float
    speculative_tok_s: float
    engine: str
    source: str
    excluded: str = ""

    @property
    def speedup(self) -> float:
        """Published speculative throughput over the published baseline."""
        return self.speculative_tok_s / self.baseline_tok_s


_SPECFORGE_339 = (
    'sgl-project/SpecForge issue #339, "Throughput degradation on Qwen3-30B-A3B with EAGLE3" '
    "(https://github.com/sgl-project/SpecForge/issues/339): SGLang bench_eagle3.py, mtbench:20, "
    "--tp-size 2 on 2x H100, bf16, draft zhuyksir/EAGLE3-Qwen3-30B-A3B-DenseHead; quoted: "
)

# The simulator has no engine profiles (it emulates vLLM); the check behind this reason is
# calibration_moe.sglang_overhead_check.
_SGLANG_EXCLUDED = (
    "SGLang: below the uniform union (the bound on bytes); an SGLang spec-step cost fitted to "
    "bs 1 explains bs 4 at any expert reuse, so the row cannot judge reuse"
)

_ANGELSLIM = (
    "Tencent/AngelSlim, docs/source/performance/speculative_decoding/benchmarks.md "
    "(https://angelslim.readthedocs.io/zh-cn/latest/performance/speculative_decoding/"
    "benchmarks.html), commit dfaf45e (2025-12-15, 'update vLLM benchmark results'); setup, "
    "README.md of that commit: 'vLLM v0.11.2 Benchmark Results' and 'All experiments were "
    "conducted on a single NVIDIA H20 GPU with the configuration: tp=1, ep=1, "
    "num_speculative_tokens=2, batch_size=1, output_len=1024' (since 2026-02 the README says "
    "'a single GPU'); tools/vllm_spec_benchmark.py of that commit: offline LLM.generate, "
    "default temperature 0, AngelSlim's own EAGLE-3 heads; table columns GSM8K, Alpaca, "
    "HumanEval, MT-bench, each 'throughput (tokens/s) | accept length'; read: "
)


def _angelslim(dataset: str, vanilla: float, eagle3: float, accept: float) -> PublishedMoeRow:
    return PublishedMoeRow(
        f"Qwen3-30B-A3B / H20 bs 1 {dataset}",
        "qwen3-30b-a3b",
        "H20",
        1,
        1,
        "eagle3",
        2,
        accept,
        vanilla,
        eagle3,
        VLLM,
        _ANGELSLIM + f"row Qwen3-30B-A3B, column {dataset}: Vanilla {vanilla} | 1, "
        f"Eagle3 {eagle3} | {accept}",
    )


PUBLISHED_MOE: tuple[PublishedMoeRow, ...] = (
    _angelslim("GSM8K", 311.84, 453.97, 2.1),
    _angelslim("Alpaca", 320.43, 432.45, 2.04),
    _angelslim("HumanEval", 325.77, 428.81, 2.02),
    _angelslim("MT-bench", 325.42, 437.06, 2.01),
    PublishedMoeRow(
        "Qwen3-30B-A3B / 2x H100 bs 1",
        "qwen3-30b-a3b",
        "H100",
        2,
        1,
        "eagle3",
        3,
        1.86,
        222.47,
        159.78,
        SGLANG,
        _SPECFORGE_339 + '"bs 1 | throughput 222.47" and "bs 1 | steps 3 | topk 1 | num_draft 4 '
        '| throughput 159.78 | acc len 1.86"',
        _SGLANG_EXCLUDED,
    ),
    PublishedMoeRow(
        "Qwen3-30B-A3B / 2x H100 bs 4",
        "qwen3-30b-a3b",
        "H100",
        2,
        4,
        "eagle3",
        3,
        1.86,
        566.21,
        447.90,
        SGLANG,
        _SPECFORGE_339 + '"bs 4 | throughput 566.21" and "bs 4 | steps 3 | topk 1 | num_draft 4 '
        '| throughput 447.90 | acc len 1.86"',
        _SGLANG_EXCLUDED,
    ),
)

# Dense Qwen3 architectures (the Qwen3 model cards: parameters, layers, hidden size, 8 KV
# heads of 128, vocabulary 151,936): only for the H20 control below.
QWEN3_DENSE: dict[str, ModelProfile] = {
    "qwen3-8b": ModelProfile("qwen3-8b", "qwen3", 8.2e9, 8.2e9, 36, 4096, 8, 128, 151936, 40960),
    "qwen3-14b": ModelProfile(
        "qwen3-14b", "qwen3", 14.8e9, 14.8e9, 40, 5120, 8, 128, 151936, 40960
    ),
    "qwen3-32b": ModelProfile(
        "qwen3-32b", "qwen3", 32.8e9, 32.8e9, 64, 5120, 8, 128, 151936, 40960
    ),
}


def _dense(model: str, name: str, vanilla: float, eagle3: float, accept: float) -> PublishedMoeRow:
    return PublishedMoeRow(
        f"{name} / H20 bs 1 MT-bench (dense control)",
        model,
        "H20",
        1,
        1,
        "eagle3",
        2,
        accept,
        vanilla,
        eagle3,
        VLLM,
        _ANGELSLIM
        + f"row {name}, column MT-bench: Vanilla {vanilla} | 1, Eagle3 {eagle3} | {accept}",
    )


DENSE_CONTROL: tuple[PublishedMoeRow, ...] = (
    _dense("qwen3-8b", "Qwen3-8B", 153.81, 258.2, 1.97),
    _dense("qwen3-14b", "Qwen3-14B", 94.46, 142.45, 1.74),
    _dense("qwen3-32b", "Qwen3-32B", 43.3, 74.1, 1.86),
)
