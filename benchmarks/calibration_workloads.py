"""The published study's configurations and request sets, shared by the calibration runs.

Published figures are /work/shared/reference/calibration.md (vLLM 0.12, `vllm bench
serve`, closed loop, concurrency 10, bf16, max 1,024 output tokens, seed 42): chat =
ShareGPT prompts, code = SWE-bench Lite prompts ("Repo: ... Problem: ... Code Context:
... Please generate the patch"). EAGLE/EAGLE-3 k = 2 with draft TP 1; n-gram k = 5,
prompt_lookup_max 4; suffix with defaults. Request bodies are OpenAI chat completions,
greedy (vllm bench's default), streamed with continuous usage so each chunk says how many
tokens it carried.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

_WORDS = [
    "the",
    "of",
    "and",
    "to",
    "a",
    "in",
    "is",
    "it",
    "you",
    "that",
    "he",
    "was",
    "for",
    "on",
    "are",
    "with",
    "as",
    "I",
    "his",
    "they",
    "be",
    "at",
    "one",
    "have",
    "this",
    "from",
    "or",
    "had",
    "by",
    "hot",
    "word",
    "but",
    "what",
    "some",
    "we",
    "can",
    "out",
    "other",
    "were",
    "all",
    "there",
    "when",
    "up",
    "use",
    "your",
    "how",
    "said",
    "an",
    "each",
    "she",
    "which",
    "do",
    "their",
    "time",
    "if",
    "will",
    "way",
    "about",
    "many",
    "then",
    "them",
    "write",
    "would",
    "like",
    "so",
    "these",
    "her",
    "long",
    "make",
    "thing",
    "see",
    "him",
    "two",
    "has",
    "look",
    "more",
    "day",
    "could",
    "go",
    "come",
    "did",
    "number",
    "sound",
    "no",
    "most",
    "people",
    "my",
    "over",
    "know",
    "water",
    "than",
    "call",
    "first",
    "who",
    "may",
    "down",
    "side",
    "been",
    "now",
    "find",
    "any",
    "new",
    "work",
    "part",
    "take",
    "get",
    "place",
    "made",
    "live",
    "where",
    "after",
    "back",
    "little",
    "only",
    "round",
    "man",
    "year",
    "came",
    "show",
    "every",
    "good",
    "me",
    "give",
    "our",
    "under",
    "name",
    "very",
    "through",
    "just",
    "form",
    "sentence",
    "great",
    "think",
    "say",
    "help",
    "low",
    "line",
    "differ",
    "turn",
    "cause",
    "much",
    "mean",
    "before",
    "move",
    "right",
    "boy",
    "old",
    "too",
]
_CODE = [
    "def",
    "class",
    "return",
    "self",
    "if",
    "else",
    "elif",
    "for",
    "while",
    "in",
    "not",
    "None",
    "True",
    "False",
    "import",
    "from",
    "as",
    "try",
    "except",
    "raise",
    "with",
    "lambda",
    "yield",
    "assert",
    "pass",
    "break",
    "continue",
    "and",
    "or",
    "is",
    "=",
    "==",
    "!=",
    "(",
    ")",
    ":",
    "[",
    "]",
    "{",
    "}",
    ",",
    ".",
    "+",
    "-",
    "*",
    "/",
    "%",
    "->",
    "args",
    "kwargs",
    "value",
    "result",
    "data",
    "items",
    "key",
    "name",
    "path",
    "config",
    "request",
    "response",
    "error",
    "logger",
    "models",
    "fields",
    "query",
    "cursor",
]


@dataclass(frozen=True)
class Engine:
    """One engine configuration of the study."""

    label: str
    model: str
    gpu: str
    tp: int
    speculative_config: dict[str, Any] | None

    def argv(self, port: int) -> list[str]:
        """`vllm serve` flags, as the operator renders them."""
        argv = ["serve", self.model, "--port", str(port), "-tp", str(self.tp), "--seed", "42"]
        if self.speculative_config is not None:
            argv += ["--speculative-config", json.dumps(self.speculative_config)]
        return argv


M8, M70 = "meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.3-70B-Instruct"
E8, E70 = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B"


def _methods(model: str, gpu: str, tp: int, eagle: str, eagle3: str) -> dict[str, Engine]:
    def head(method: str, checkpoint: str) -> dict[str, Any]:
        return {
            "method": method,
            "model": checkpoint,
            "num_speculative_tokens": 2,
            "draft_tensor_parallel_size": 1,
        }

    configs: dict[str, dict[str, Any] | None] = {
        "none": None,
        "n-gram": {"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4},
        "suffix": {"method": "suffix"},
        "EAGLE": head("eagle", eagle),
        "EAGLE-3": head("eagle3", eagle3),
    }
    return {label: Engine(label, model, gpu, tp, config) for label, config in configs.items()}


BLOCKS: dict[str, dict[str, Engine]] = {
    "8B / L40S": _methods(M8, "L40S", 1, "yuhuili/EAGLE-LLaMA3.1-Instruct-8B", E8),
    # The study's 70B "EAGLE" row ran the EAGLE-3 checkpoint under `method: eagle`.
    "70B / 2x H200": _methods(M70, "H200", 2, E70, E70),
}

# (block, workload) -> method -> (output tok/s, mean TPOT ms, mean ITL ms, speedup)
PUBLISHED: dict[tuple[str, str], dict[str, tuple[float, float | None, float | None, float]]] = {
    ("8B / L40S", "chat"): {
        "none": (421, 23.7, 23.4, 1.00),
        "n-gram": (491, 21.85, 24.8, 1.17),
        "suffix": (585, 18.21, 26.1, 1.39),
        "EAGLE-3": (589, 17.90, 29.2, 1.40),
        "EAGLE": (601, 17.49, 31.1, 1.43),
    },
    ("8B / L40S", "code"): {
        "none": (370, None, None, 1.00),
        "n-gram": (406, 23.90, 28.4, 1.10),
        "EAGLE": (398, 24.40, 30.0, 1.08),
        "EAGLE-3": (379, 25.56, 29.5, 1.03),
        "suffix": (534, 18.10, 31.8, 1.45),
    },
    ("70B / 2x H200", "chat"): {
        "none": (343, None, None, 1.00),
        "EAGLE": (351, 22.81, 24.8, 1.02),
        "n-gram": (385, 21.90, 23.7, 1.12),
        "suffix": (455, 18.24, 24.8, 1.33),
        "EAGLE-3": (537, 15.95, 25.5, 1.57),
    },
    ("70B / 2x H200", "code"): {
        "none": (375, None, None, 1.00),
        "EAGLE": (377, 25.38, 28.4, 1.01),
        "n-gram": (416, 23.20, 27.0, 1.11),
        "suffix": (522, 18.32, 30.6, 1.39),
        "EAGLE-3": (601, 15.73, 32.1, 1.60),
    },
}


def _chat_prompt(rng: random.Random) -> str:
    length = max(8, min(1500, round(rng.lognormvariate(0.0, 0.8) * 120)))
    return " ".join(rng.choice(_WORDS) for _ in range(length))


def _code_prompt(rng: random.Random, index: int) -> str:
    problem = " ".join(rng.choice(_WORDS) for _ in range(round(rng.lognormvariate(0, 0.4) * 120)))
    lines = []
    for _ in range(max(20, round(rng.lognormvariate(0.0, 0.35) * 90))):
        width = rng.randint(3, 12)
        lines.append(" ".join(rng.choice(_CODE) + str(rng.randrange(40)) for _ in range(width)))
    return (
        f"Repo: project{index % 12}/lib Problem: {problem} Code Context: "
        + " ".join(lines)
        + " Please generate the patch"
    )


def request_bodies(workload: str, count: int, seed: int = 42) -> list[dict[str, Any]]:
    """`count` chat-completion bodies for a workload class, identical for every engine."""
    rng = random.Random(f"{workload}:{seed}")
    bodies = []
    for index in range(count):
        prompt = _chat_prompt(rng) if workload == "chat" else _code_prompt(rng, index)
        bodies.append(
            {
                "messages": [{"role": "user", "content": prompt}],
                "max_tokens": 1024,
                "temperature": 0.0,
                "seed": seed * 100000 + index,
                "stream": True,
                "stream_options": {"include_usage": True, "continuous_usage_stats": True},
                "specdecode_workload": workload,
            }
        )
    return bodies
