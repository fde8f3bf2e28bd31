"""`--speculative-config` fails at start exactly where vLLM 0.11.2 fails, with its message
(SPECDECODE_VLLM_VERSION=0.11.2; every release: test_speculative_versions_table.py)."""

from __future__ import annotations

import json
import subprocess

import pytest
from simtesting import EAGLE3_8B, LLAMA_8B, free_port, sim_command, sim_env

from specdecode_sim.cli import main

pytestmark = pytest.mark.unit

EAGLE3_HEAD = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
NO_DRAFT_MODEL = "num_speculative_tokens was provided but without speculative model."

# (case id, speculative config, extra flags, expected fragment of stderr)
INVALID: list[tuple[str, object, list[str], str]] = [
    ("eagle3-without-model", {"method": "eagle3", "num_speculative_tokens": 3}, [], NO_DRAFT_MODEL),
    ("eagle-without-model", {"method": "eagle", "num_speculative_tokens": 3}, [], NO_DRAFT_MODEL),
    ("medusa-without-model", {"method": "medusa", "num_speculative_tokens": 2}, [], NO_DRAFT_MODEL),
    (
        "mlp-speculator-without-model",
        {"method": "mlp_speculator", "num_speculative_tokens": 2},
        [],
        NO_DRAFT_MODEL,
    ),
    (
        "draft-model-method",
        {
            "method": "draft_model",
            "model": "meta-llama/Llama-3.2-1B-Instruct",
            "num_speculative_tokens": 3,
        },
        [],
        "NotImplementedError: Draft model speculative decoding is not supported yet.",
    ),
    (
        "plain-draft-model",
        {"model": "meta-llama/Llama-3.2-1B-Instruct", "num_speculative_tokens": 3},
        [],
        "NotImplementedError: Speculative decoding with draft model is not supported yet.",
    ),
    (
        "zero-tokens",
        {"method": "ngram", "num_speculative_tokens": 0},
        [],
        "Input should be greater than 0",
    ),
    (
        "negative-tokens",
        {"method": "ngram", "num_speculative_tokens": -2},
        [],
        "Input should be greater than 0",
    ),
    (
        "tokens-not-int",
        {"method": "eagle3", "model": EAGLE3_HEAD, "num_speculative_tokens": "three"},
        [],
        "Input should be a valid integer",
    ),
    (
        "tokens-fractional",
        {"method": "eagle3", "model": EAGLE3_HEAD, "num_speculative_tokens": 2.5},
        [],
        "fractional part",
    ),
    (
        "lookup-min-zero",
        {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 0},
        [],
        "prompt_lookup_min\n  Input should be greater than or equal to 1",
    ),
    (
        "lookup-max-zero",
        {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 0},
        [],
        "prompt_lookup_max\n  Input should be greater than or equal to 1",
    ),
    (
        "lookup-min-above-max",
        {
            "method": "ngram",
            "num_speculative_tokens": 3,
            "prompt_lookup_min": 5,
            "prompt_lookup_max": 2,
        },
        [],
        "prompt_lookup_min=5 must be <= prompt_lookup_max=2",
    ),
    (
        "unknown-method",
        {"method": "lookahead", "num_speculative_tokens": 3},
        [],
        "method\n  Input should be 'ngram', 'medusa'",
    ),
    (
        "draft-tp-not-1-or-target",
        {
            "method": "eagle3",
            "model": EAGLE3_HEAD,
            "num_speculative_tokens": 3,
            "draft_tensor_parallel_size": 2,
        },
        ["-tp", "4"],
        "cannot be other value than 1 or target model tensor_parallel_size",
    ),
    (
        "draft-max-len-above-target",
        {
            "method": "eagle3",
            "model": EAGLE3_HEAD,
            "num_speculative_tokens": 3,
            "max_model_len": 100000,
        },
        [],
        "cannot be larger than target_max_model_len=8192",
    ),
    (
        "eagle3-unsupported-target",
        {"method": "eagle3", "model": EAGLE3_HEAD, "num_speculative_tokens": 3},
        ["--model-override=mistralai/Mistral-7B-Instruct-v0.3"],
        "Eagle3 is only supported for ['llama', 'qwen', 'minicpm', 'gpt_oss'] models.",
    ),
    (
        "eagle-without-k",
        {"method": "eagle", "model": "yuhuili/EAGLE-LLaMA3-Instruct-8B"},
        [],
        "num_speculative_tokens must be provided with speculative model",
    ),
    (
        "disable-by-batch-size-1",
        {
            "method": "eagle3",
            "model": EAGLE3_HEAD,
            "num_speculative_tokens": 3,
            "disable_by_batch_size": 1,
        },
        [],
        "disable_by_batch_size\n  Input should be greater than or equal to 2",
    ),
    (
        "suffix-depth-zero",
        {"method": "suffix", "suffix_decoding_max_tree_depth": 0},
        [],
        "suffix_decoding_max_tree_depth=0 must be >= 1",
    ),
    (
        "suffix-prob-above-one",
        {"method": "suffix", "suffix_decoding_min_token_prob": 1.5},
        [],
        "suffix_decoding_min_token_prob=1.5 must be in [0, 1]",
    ),
    (
        "suffix-negative-factor",
        {"method": "suffix", "suffix_decoding_max_spec_factor": -1},
        [],
        "suffix_decoding_max_spec_factor=-1.0 must be >= 0",
    ),
    (
        "suffix-negative-cache",
        {"method": "suffix", "suffix_decoding_max_cached_requests": -1},
        [],
        "suffix_decoding_max_cached_requests=-1 must be >= 0",
    ),
    ("not-an-object", [1, 2], [], "argument after ** must be a mapping, not list"),
    (
        "token-tree-unparsable",
        {
            "method": "eagle",
            "model": "yuhuili/EAGLE-LLaMA3-Instruct-8B",
            "num_speculative_tokens": 3,
            "speculative_token_tree": "[(0,",
        },
        [],
        "SyntaxError",
    ),
]

VALID: list[tuple[str, object, list[str]]] = [
    (
        "eagle3-unknown-key-ignored",
        {
            "method": "eagle3",
            "model": EAGLE3_HEAD,
            "num_speculative_tokens": 3,
            "acceptance_boost": 2,
        },
        [],
    ),
    ("ngram-defaults", {"method": "ngram", "num_speculative_tokens": 4}, []),
    ("ngram-by-model-name", {"model": "ngram", "num_speculative_tokens": 4}, []),
    ("suffix-default-k", {"method": "suffix"}, []),
    ("mtp-alias", {"method": "deepseek_mtp", "num_speculative_tokens": 1}, []),
    (
        "eagle-by-name",
        {"model": "yuhuili/EAGLE-LLaMA3-Instruct-8B", "num_speculative_tokens": 2},
        [],
    ),
    (
        "draft-tp-1",
        {
            "method": "eagle3",
            "model": EAGLE3_HEAD,
            "num_speculative_tokens": 3,
            "draft_tensor_parallel_size": 1,
        },
        ["-tp", "2"],
    ),
]


def _argv(config: object, extra: list[str]) -> list[str]:
    model = LLAMA_8B
    flags = list(extra)
    for flag in list(flags):
        if flag.startswith("--model-override="):
            model = flag.split("=", 1)[1]
            flags.remove(flag)
    return [
        "serve",
        model,
        "--max-model-len",
        "8192",
        "--speculative-config",
        json.dumps(config),
        *flags,
    ]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(sim_env()):
        if key.startswith("SPECDECODE_SIM_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("SPECDECODE_VLLM_VERSION", "0.11.2")


def test_the_table_is_big_enough() -> None:
    assert len(INVALID) >= 15
    assert len({case for case, *_ in INVALID}) == len(INVALID)


@pytest.mark.parametrize(
    ("case", "config", "extra", "expected"), INVALID, ids=[c[0] for c in INVALID]
)
def test_invalid_config_fails_at_start(
    case: str, config: object, extra: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_argv(config, extra)) == 1, case
    assert expected in capsys.readouterr().err


@pytest.mark.parametrize(("case", "config", "extra"), VALID, ids=[c[0] for c in VALID])
def test_valid_config_passes_validation(case: str, config: object, extra: list[str]) -> None:
    from specdecode_sim.cliargs import parse_cli
    from specdecode_sim.settings import load_settings
    from specdecode_sim.startup import build_plan

    plan = build_plan(
        parse_cli(_argv(config, extra)), load_settings({"SPECDECODE_VLLM_VERSION": "0.11.2"})
    )
    assert plan.engine.spec is not None, case


def test_malformed_json_is_an_argparse_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", LLAMA_8B, "--speculative-config", "{method: eagle3"])
    assert exited.value.code == 2
    assert (
        "argument --speculative-config: Value {method: eagle3 cannot be converted to"
        in capsys.readouterr().err
    )


def test_subprocess_exits_non_zero_before_binding_the_port() -> None:
    port = free_port()
    bad = json.dumps({"method": "eagle3", "num_speculative_tokens": 3})
    done = subprocess.run(
        sim_command(
            "serve",
            LLAMA_8B,
            "--port",
            str(port),
            "--host",
            "127.0.0.1",
            "--speculative-config",
            bad,
        ),
        env=sim_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert NO_DRAFT_MODEL in done.stderr
    assert "Uvicorn running" not in done.stderr


def test_good_config_is_accepted_by_the_real_entry_point() -> None:
    from specdecode_sim.cliargs import parse_cli

    args = parse_cli(["serve", LLAMA_8B, "--speculative-config", EAGLE3_8B])
    assert args.speculative_config["method"] == "eagle3"
