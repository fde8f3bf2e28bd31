"""Makes the real-vLLM lane's tiny test models once, without any hub, and caches them.

Why: the lane must start a real vLLM with speculative decoding and know the acceptance it
should see, yet nothing may download weights (HF_HUB_OFFLINE=1). So every model is made
here from seeded random weights, with one byte-level BPE tokenizer trained on text already
on disk. Each model's acceptance is known by construction:

| directory       | what                                                  | acceptance (greedy)  |
|-----------------|-------------------------------------------------------|----------------------|
| target/         | Llama, 2 layers, hidden 256, vocab 4,096, bf16        | (the served model)   |
| draft-same/     | a byte copy of target/                                | ~1 (same argmax)     |
| draft-small/    | 1 layer: target's embeddings, layer 0, norm, lm_head  | partial (the target's|
|                 |                                                       |  layer 1 is damped)  |
| eagle3-random/  | an EAGLE-3 head (llama_eagle3.py's names), random     | ~0                   |
| draft-heavy/    | target's 2 layers then 14 whose outputs are zeroed:   | ~1 (the target's     |
|                 | the target's function at 8x its depth                 |  function, ~0.99)    |

Run it with the vLLM virtualenv's python (torch, transformers, tokenizers, safetensors):
`python make_models.py [--cache DIR]` prints the models' folder. The folder is
`$SPECDECODE_CACHE/models/<hash of this file>`, so editing the script makes new models and a
second run is free. It is built in a sibling folder and renamed, so a crash leaves nothing
half-made.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

VOCAB = 4096
HIDDEN = 256
HEADS = 4
KV_HEADS = 2
HEAD_DIM = 64
INTERMEDIATE = 512
MAX_POSITIONS = 2048
SEED = 0
# The target's second layer writes this fraction of its output into the residual stream, so
# the 1-layer draft (the target without that layer) agrees with it on most greedy tokens.
LAYER1_SCALE = 0.25
# draft-heavy/: a draft that agrees with the target on ~99 % of tokens yet costs many times its
# depth, so on any hardware speculation with it is a measured loss (the real-vLLM demo's
# candidate: acceptance passes, the speedup gate must fail it).
HEAVY_LAYERS = 16
SPECIAL = ["<|pad|>", "<|bos|>", "<|eos|>", "<|system|>", "<|user|>", "<|assistant|>"]
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<|{{ message['role'] }}|>\n"
    "{{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
WORDS = [
    "the",
    "a",
    "model",
    "engine",
    "token",
    "draft",
    "target",
    "cluster",
    "rollout",
    "gate",
    "verdict",
    "stream",
    "batch",
    "kernel",
    "cache",
    "memory",
    "latency",
    "throughput",
    "request",
    "server",
    "tensor",
    "layer",
    "head",
    "node",
    "pod",
    "accept",
    "reject",
    "promote",
    "measure",
    "count",
    "window",
    "sample",
    "greedy",
    "decode",
    "verify",
    "speculate",
]


def cache_dir(root: Path) -> Path:
    """Where this version of the script keeps its models."""
    digest = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]
    return root / "models" / digest


def corpus() -> list[str]:
    """Text already on disk (package METADATA files, sorted) plus seeded sentences."""
    rng = random.Random(SEED)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 30))) for _ in range(4000)]
    for candidate in sorted(Path(sys.prefix).glob("lib/python3*/site-packages/*.dist-info")):
        metadata = candidate / "METADATA"
        if metadata.is_file():
            texts.append(metadata.read_text(errors="replace")[:20000])
    return texts


def make_tokenizer(out: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<|bos|>",
        eos_token="<|eos|>",
        pad_token="<|pad|>",
        model_max_length=MAX_POSITIONS,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)


def llama_config(layers: int) -> object:
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_hidden_layers=layers,
        num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS,
        head_dim=HEAD_DIM,
        max_position_embeddings=MAX_POSITIONS,
        bos_token_id=SPECIAL.index("<|bos|>"),
        eos_token_id=SPECIAL.index("<|eos|>"),
        pad_token_id=SPECIAL.index("<|pad|>"),
        tie_word_embeddings=False,
        torch_dtype="bfloat16",
    )


def make_target_and_draft(tokenizer_dir: Path, target: Path, draft: Path) -> None:
    import torch
    from transformers import LlamaForCausalLM

    torch.manual_seed(SEED)
    model = LlamaForCausalLM(llama_config(2))
    with torch.no_grad():
        layer1 = model.model.layers[1]
        layer1.self_attn.o_proj.weight.mul_(LAYER1_SCALE)
        layer1.mlp.down_proj.weight.mul_(LAYER1_SCALE)
    model = model.to(torch.bfloat16)
    model.save_pretrained(target, safe_serialization=True)
    small = LlamaForCausalLM(llama_config(1)).to(torch.bfloat16)
    state = {k: v for k, v in model.state_dict().items() if not k.startswith("model.layers.1.")}
    small.load_state_dict(state, strict=True)
    small.save_pretrained(draft, safe_serialization=True)
    for folder in (target, draft):
        for name in os.listdir(tokenizer_dir):
            shutil.copy(tokenizer_dir / name, folder / name)


def make_heavy_draft(target: Path, out: Path) -> None:
    """The target's layers, embeddings, norm and head, then more layers whose attention and
    MLP output projections are zero: each adds nothing to the residual stream, so the logits
    are the target's up to rounding (vLLM's CPU fused add-norm rounds the residual to bf16
    between layers: greedy tokens differ at ~1 % of positions), but every layer is computed."""
    import torch
    from transformers import LlamaForCausalLM

    torch.manual_seed(SEED + 5)
    heavy = LlamaForCausalLM(llama_config(HEAVY_LAYERS))
    with torch.no_grad():
        for layer in heavy.model.layers[2:]:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
    heavy = heavy.to(torch.bfloat16)
    source = LlamaForCausalLM.from_pretrained(target, torch_dtype=torch.bfloat16)
    state = heavy.state_dict()
    state.update(source.state_dict())  # layers 0-1, embeddings, norm, lm_head
    heavy.load_state_dict(state, strict=True)
    heavy.save_pretrained(out, safe_serialization=True)
    for name in os.listdir(target):
        if name.startswith(("tokenizer", "special_tokens", "chat_template")):
            shutil.copy(target / name, out / name)


def make_eagle3(tokenizer_dir: Path, out: Path) -> None:
    """An EAGLE-3 head as vLLM's llama_eagle3.py loads it: `midlayer.*` (its first layer,
    whose q/k/v read embeddings and hidden states side by side), `fc` (the target's aux hidden
    states down to one), `norm`, `lm_head`; the embeddings come from the target."""
    import torch
    from safetensors.torch import save_file

    generator = torch.Generator().manual_seed(SEED + 3)

    def rand(*shape: int) -> torch.Tensor:
        return (torch.randn(*shape, generator=generator) * 0.02).to(torch.bfloat16)

    def ones(n: int) -> torch.Tensor:
        return torch.ones(n, dtype=torch.bfloat16)

    aux_layers = [0, 1]
    q, kv = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM
    weights = {
        "midlayer.self_attn.q_proj.weight": rand(q, 2 * HIDDEN),
        "midlayer.self_attn.k_proj.weight": rand(kv, 2 * HIDDEN),
        "midlayer.self_attn.v_proj.weight": rand(kv, 2 * HIDDEN),
        "midlayer.self_attn.o_proj.weight": rand(HIDDEN, q),
        "midlayer.mlp.gate_proj.weight": rand(INTERMEDIATE, HIDDEN),
        "midlayer.mlp.up_proj.weight": rand(INTERMEDIATE, HIDDEN),
        "midlayer.mlp.down_proj.weight": rand(HIDDEN, INTERMEDIATE),
        "midlayer.input_layernorm.weight": ones(HIDDEN),
        "midlayer.post_attention_layernorm.weight": ones(HIDDEN),
        "midlayer.hidden_norm.weight": ones(HIDDEN),
        "fc.weight": rand(HIDDEN, HIDDEN * len(aux_layers)),
        "norm.weight": ones(HIDDEN),
        "lm_head.weight": rand(VOCAB, HIDDEN),
    }
    out.mkdir(parents=True)
    save_file(weights, str(out / "model.safetensors"), metadata={"format": "pt"})
    config = llama_config(1).to_dict()  # type: ignore[attr-defined]
    config.update(
        architectures=["LlamaForCausalLMEagle3"],
        draft_vocab_size=VOCAB,
        target_hidden_size=HIDDEN,
        eagle_config={"eagle_aux_hidden_state_layer_ids": aux_layers},
    )
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True))
    for name in os.listdir(tokenizer_dir):
        shutil.copy(tokenizer_dir / name, out / name)


def build(final: Path) -> None:
    work = final.with_name(final.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    tokenizer_dir = work / "tokenizer"
    make_tokenizer(tokenizer_dir)
    make_target_and_draft(tokenizer_dir, work / "target", work / "draft-small")
    shutil.copytree(work / "target", work / "draft-same")
    make_heavy_draft(work / "target", work / "draft-heavy")
    make_eagle3(tokenizer_dir, work / "eagle3-random")
    for path in work.rglob("*"):  # readable by an engine running as any user
        path.chmod(0o755 if path.is_dir() else 0o644)
    work.rename(final)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_root = os.environ.get("SPECDECODE_CACHE", str(Path.home() / ".cache/specdecode"))
    parser.add_argument("--cache", type=Path, default=Path(default_root))
    args = parser.parse_args()
    final = cache_dir(args.cache)
    if not (final / "draft-heavy" / "config.json").is_file():
        final.parent.mkdir(parents=True, exist_ok=True)
        build(final)
    print(final)


if __name__ == "__main__":
    main()
