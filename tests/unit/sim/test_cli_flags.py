"""The command line behaves like `vllm serve`: same flags, same rejections."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from simtesting import LLAMA_8B

from specdecode_sim.cli import main
from specdecode_sim.cliargs import human_readable_int, normalize, parse_cli
from specdecode_sim.settings import SettingsError, load_settings
from specdecode_sim.startup import build_plan

pytestmark = pytest.mark.unit


def test_common_vllm_flags_parse() -> None:
    args = parse_cli(
        [
            "serve", LLAMA_8B, "-tp", "2", "--host", "0.0.0.0", "--port", "9000",
            "--served-model-name", "llama", "llama-alias", "--max-model-len", "32k",
            "--seed", "7", "--dtype", "bfloat16", "--gpu-memory-utilization", "0.85",
            "--max-num-seqs", "128", "--max-num-batched-tokens", "4096", "--revision", "main",
            "--disable-log-requests", "--trust-remote-code", "--enforce-eager",
            "--api-key", "secret", "--enable-prefix-caching", "--no-enable-chunked-prefill",
        ]
    )  # fmt: skip
    assert args.tensor_parallel_size == 2 and args.port == 9000 and args.seed == 7
    assert args.served_model_name == ["llama", "llama-alias"]
    assert args.max_model_len == 32000
    assert args.trust_remote_code and args.enforce_eager and not args.enable_chunked_prefill


def test_port_defaults_to_8000_and_underscores_work() -> None:
    args = parse_cli(["serve", LLAMA_8B, "--tensor_parallel_size", "4"])
    assert args.port == 8000 and args.tensor_parallel_size == 4


@pytest.mark.parametrize(
    "argv",
    [
        # argparse prefix matching, as in vLLM: --gpu means --gpu-memory-utilization
        ["serve", LLAMA_8B, "--gpu", "H100"],
        ["serve", LLAMA_8B, "--workload", "code"],
        ["serve", LLAMA_8B, "--time-scale", "0.1"],
        ["serve", LLAMA_8B, "--port", "eighty"],
    ],
)
def test_unknown_or_bad_flags_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "vllm serve: error:" in err or "vllm: error: unrecognized arguments" in err
    assert any(word in err for word in ("unrecognized arguments", "invalid int", "invalid float"))


def test_nested_speculative_config_keys() -> None:
    argv = normalize(
        [
            "serve",
            "m",
            "--speculative-config.method",
            "ngram",
            "--speculative_config.num_speculative_tokens=4",
        ]
    )
    args = parse_cli(argv)
    assert args.speculative_config == {"method": "ngram", "num_speculative_tokens": 4}


def test_human_readable_sizes() -> None:
    assert human_readable_int("1k") == 1000
    assert human_readable_int("1K") == 1024
    assert human_readable_int("2048") == 2048


def test_bind_host_env_overrides_host_flag() -> None:
    args = parse_cli(["serve", LLAMA_8B, "--host", "0.0.0.0"])
    plan = build_plan(args, load_settings({"SPECDECODE_SIM_BIND_HOST": "127.0.0.7"}))
    assert plan.host == "127.0.0.7"


def test_startup_rejects_what_vllm_would(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "meta-llama/Llama-3.3-70B-Instruct"]) == 1
    assert "CUDA out of memory" in capsys.readouterr().err
    assert main(["serve", LLAMA_8B, "--max-model-len", "200000"]) == 1
    assert (
        "User-specified max_model_len (200000) is greater than the derived"
        in capsys.readouterr().err
    )
    assert main(["serve", LLAMA_8B, "--gpu-memory-utilization", "1.5"]) == 1
    assert "Input should be less than or equal to 1" in capsys.readouterr().err


def test_settings_validation() -> None:
    with pytest.raises(SettingsError):
        load_settings({"SPECDECODE_SIM_GPU": "TPU"})
    with pytest.raises(SettingsError):
        load_settings({"SPECDECODE_SIM_ACCEPTANCE": "1.5"})
    with pytest.raises(SettingsError):
        load_settings({"SPECDECODE_SIM_TIME_SCALE": "0"})
    settings = load_settings({"SPECDECODE_SIM_ACCEPTANCE": "0.4", "SPECDECODE_SIM_GPU": "l40s"})
    assert settings.acceptance.constant == 0.4 and settings.gpu == "L40S"


def test_profile_file_with_env_precedence(tmp_path: Path) -> None:
    profile = tmp_path / "profile.json"
    content = {
        "gpu": "A100",
        "time_scale": 0.5,
        "hardware": {"step_overhead_s": 0.001},
        "acceptance": {"eagle3/code": {"first": 0.9, "decay": 0.9}},
    }
    profile.write_text(json.dumps(content))
    settings = load_settings(
        {"SPECDECODE_SIM_PROFILE": str(profile), "SPECDECODE_SIM_TIME_SCALE": "0.25"}
    )
    assert settings.gpu == "A100" and settings.time_scale == 0.25
    assert settings.acceptance.curve("eagle3", "code").first == 0.9
    plan = build_plan(parse_cli(["serve", LLAMA_8B]), settings)
    assert plan.engine.hardware.step_overhead_s == 0.001
    assert plan.engine.max_num_seqs == 256  # A100 defaults, as vLLM
