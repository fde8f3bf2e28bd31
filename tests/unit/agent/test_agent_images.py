"""The image table maps images to local commands and binds them to the pod IP."""

from __future__ import annotations

from pathlib import Path

import pytest

from localcluster.agent import realvllm
from localcluster.agent.images import (
    ImageNotFound,
    LaunchRequest,
    Toolbox,
    UnsupportedCommand,
    image_repository,
    plan_launch,
)

pytestmark = pytest.mark.unit

TOOLS = Toolbox(bin_dir=Path("/venv/bin"), python="/venv/bin/python")


def request(
    image: str, command: list[str] | None = None, args: list[str] | None = None
) -> LaunchRequest:
    return LaunchRequest(image, command or [], args or [], pod_ip="127.0.0.9", pod_name="p")


@pytest.mark.parametrize(
    ("image", "repository"),
    [
        ("ghcr.io/specdecode-operator/vllm-sim:0.1", "ghcr.io/specdecode-operator/vllm-sim"),
        ("ghcr.io/specdecode-operator/vllm-sim@sha256:abc", "ghcr.io/specdecode-operator/vllm-sim"),
        ("busybox", "docker.io/library/busybox"),
        ("busybox:1.36", "docker.io/library/busybox"),
        ("vllm/vllm-openai:v0.11.0", "docker.io/vllm/vllm-openai"),
        ("localhost:5000/x/y:1", "localhost:5000/x/y"),
    ],
)
def test_image_repository(image: str, repository: str) -> None:
    assert image_repository(image) == repository


def test_vllm_sim_replaces_vllm_and_binds_pod_ip() -> None:
    plan = plan_launch(
        request(
            "ghcr.io/specdecode-operator/vllm-sim:latest",
            ["vllm", "serve", "m"],
            ["--host", "0.0.0.0", "--port", "8000"],
        ),
        TOOLS,
    )
    assert plan.argv == [
        "/venv/bin/specdecode-sim",
        "serve",
        "m",
        "--host",
        "0.0.0.0",
        "--port",
        "8000",
    ]
    assert plan.env == {"SPECDECODE_SIM_BIND_HOST": "127.0.0.9"}
    assert not plan.needs_api_credentials


def test_vllm_sim_default_entrypoint_is_vllm_serve() -> None:
    plan = plan_launch(request("ghcr.io/specdecode-operator/vllm-sim:1", args=["m"]), TOOLS)
    assert plan.argv == ["/venv/bin/specdecode-sim", "serve", "m"]


def test_operator_gets_credentials_and_bind_host() -> None:
    plan = plan_launch(
        request("ghcr.io/specdecode-operator/operator:0.1.0", args=["--verbose"]), TOOLS
    )
    assert plan.argv == ["/venv/bin/specdecode-operator", "--verbose"]
    # This tree's operator code, not the venv's editable install of another checkout.
    source = Path(__file__).resolve().parents[3] / "operator"
    assert plan.env == {"SPECDECODE_BIND_HOST": "127.0.0.9", "PYTHONPATH": str(source)}
    assert (source / "specdecode" / "__init__.py").exists()
    assert plan.needs_api_credentials


def test_agnhost_netexec_runs_the_local_server_on_the_pod_ip() -> None:
    plan = plan_launch(
        request(
            "registry.k8s.io/e2e-test-images/agnhost:2.53", args=["netexec", "--http-port=8080"]
        ),
        TOOLS,
    )
    assert plan.argv[0] == "/venv/bin/python"
    assert plan.argv[1].endswith("testimages/netexec.py")
    assert plan.argv[2:] == ["--host", "127.0.0.9", "--pod-name", "p", "--http-port=8080"]


def test_busybox_runs_allowed_host_tools_only() -> None:
    plan = plan_launch(request("busybox:1.36", ["sh", "-c", "exit 3"]), TOOLS)
    assert Path(plan.argv[0]).name == "sh" and plan.argv[1:] == ["-c", "exit 3"]
    with pytest.raises(UnsupportedCommand):
        plan_launch(request("busybox", ["wget", "x"]), TOOLS)


def test_unknown_image_names_the_image_and_the_table() -> None:
    with pytest.raises(ImageNotFound) as caught:
        plan_launch(request("nginx:1.27"), TOOLS)
    assert '"nginx:1.27"' in str(caught.value)
    assert "images.py" in str(caught.value)


def test_args_replace_the_default_command_of_busybox() -> None:
    plan = plan_launch(request("busybox", args=["sh", "-c", "echo hi"]), TOOLS)
    assert Path(plan.argv[0]).name == "sh" and plan.argv[1:] == ["-c", "echo hi"]
    default = plan_launch(request("busybox"), TOOLS)
    assert Path(default.argv[0]).name == "sh" and default.argv[1:] == []


def test_the_vllm_cpu_image_runs_the_real_vllm_on_the_pod_ip_one_core_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(realvllm, "installed_venv", lambda: Path("/lane"))
    monkeypatch.setattr(realvllm, "_cores", lambda: [0, 1])
    image = "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.32.0"
    args = ["/models/target", "--host", "0.0.0.0", "--port", "8000"]
    plans = [plan_launch(request(image, ["vllm", "serve"], args), TOOLS) for _ in range(2)]
    assert plans[0].argv == [
        "/lane/bin/python",
        str(realvllm.LAUNCHER),
        "serve",
        "/models/target",
        "--host",
        "127.0.0.9",
        "--port",
        "8000",
    ]
    env = plans[0].env
    assert env["VLLM_HOST_IP"] == "127.0.0.9"
    assert env["HF_HUB_OFFLINE"] == "1" and env["VLLM_CPU_KVCACHE_SPACE"] == "1"
    # two engines started one after the other compute on different cores
    binds = {plan.env["VLLM_CPU_OMP_THREADS_BIND"] for plan in plans}
    assert binds == {"0", "1"}


def test_the_vllm_cpu_image_fails_like_a_missing_image_until_the_lane_is_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(realvllm, "installed_venv", lambda: None)
    image = "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.32.0"
    with pytest.raises(UnsupportedCommand, match=r"install\.sh"):
        plan_launch(request(image, ["vllm", "serve"], ["m"]), TOOLS)
