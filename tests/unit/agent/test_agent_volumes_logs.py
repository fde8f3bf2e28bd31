"""Volumes as folders, mount-path rewriting, state files and log reading."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from localcluster.agent.env import PodRuntime
from localcluster.agent.logs import read_logs
from localcluster.agent.objects import ContainerConfigError, DictObjectSource
from localcluster.agent.state import previous_states, write_state
from localcluster.agent.volumes import VolumeBuilder, mount_rewriter

pytestmark = pytest.mark.unit

SOURCE = DictObjectSource(
    config_maps={("ns", "cfg"): {"app.yaml": "a: 1\n", "other": "x"}},
    secrets={("ns", "sec"): {"token": "t0k"}},
)


class FixedTokens:
    def mint(self, pod: dict[str, Any], audience: str | None, expiration: int) -> str:
        return f"token-for-{pod['metadata']['name']}-{audience}-{expiration}"


def pod(volumes: list[dict[str, Any]]) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u"}, "spec": {"volumes": volumes}}


def test_configmap_secret_emptydir_projected_and_downward(tmp_path: Path) -> None:
    volumes = [
        {
            "name": "cfg",
            "configMap": {"name": "cfg", "items": [{"key": "app.yaml", "path": "conf/app.yaml"}]},
        },
        {"name": "sec", "secret": {"secretName": "sec"}},
        {"name": "scratch", "emptyDir": {}},
        {
            "name": "kube-api-access-x",
            "projected": {
                "sources": [
                    {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
                    {"configMap": {"name": "cfg", "items": [{"key": "other", "path": "ca.crt"}]}},
                    {
                        "downwardAPI": {
                            "items": [
                                {
                                    "path": "namespace",
                                    "fieldRef": {"fieldPath": "metadata.namespace"},
                                }
                            ]
                        }
                    },
                ]
            },
        },
    ]
    paths = VolumeBuilder(tmp_path, SOURCE, FixedTokens()).build(
        pod(volumes), PodRuntime("127.0.0.4")
    )
    assert (paths["cfg"] / "conf/app.yaml").read_text() == "a: 1\n"
    assert not (paths["cfg"] / "other").exists()
    assert (paths["sec"] / "token").read_text() == "t0k"
    assert paths["scratch"].is_dir()
    projected = paths["kube-api-access-x"]
    assert (projected / "token").read_text() == "token-for-p-None-3607"
    assert (projected / "ca.crt").read_text() == "x"
    assert (projected / "namespace").read_text() == "ns"


def test_missing_configmap_volume_is_an_error_unless_optional(tmp_path: Path) -> None:
    builder = VolumeBuilder(tmp_path, SOURCE, None)
    with pytest.raises(ContainerConfigError, match='configmap "gone" not found'):
        builder.build(pod([{"name": "v", "configMap": {"name": "gone"}}]), PodRuntime("127.0.0.4"))
    paths = builder.build(
        pod([{"name": "v", "configMap": {"name": "gone", "optional": True}}]),
        PodRuntime("127.0.0.4"),
    )
    assert list(paths["v"].iterdir()) == []


def test_mount_paths_are_rewritten_as_whole_path_prefixes() -> None:
    container = {
        "volumeMounts": [
            {"name": "cfg", "mountPath": "/etc/app"},
            {"name": "deep", "mountPath": "/etc/app/deep"},
            {"name": "one", "mountPath": "/etc/one.yaml", "subPath": "one.yaml"},
        ]
    }
    paths = {"cfg": Path("/h/cfg"), "deep": Path("/h/deep"), "one": Path("/h/one")}
    rewrite = mount_rewriter(container, paths)
    assert rewrite("--config=/etc/app/x.yaml") == "--config=/h/cfg/x.yaml"
    assert rewrite("/etc/app/deep/y") == "/h/deep/y"
    assert rewrite("/etc/app") == "/h/cfg"
    assert rewrite("/etc/one.yaml") == "/h/one/one.yaml"
    assert rewrite("/etc/application") == "/etc/application"
    assert rewrite("/opt/etc/app/x") == "/opt/etc/app/x"
    assert rewrite("a:/etc/app:b") == "a:/h/cfg:b"


def test_state_files_and_logs(tmp_path: Path) -> None:
    pod_dir = tmp_path / "pods" / "ns" / "p"
    write_state(
        pod_dir,
        {
            "uid": "u1",
            "namespace": "ns",
            "name": "p",
            "main_containers": ["main"],
            "containers": {},
        },
    )
    (pod_dir / "main.log").write_text("one\ntwo\nthree\n")
    (pod_dir / "main.previous.log").write_text("old\n")
    assert read_logs(tmp_path, "ns", "p") == "one\ntwo\nthree\n"
    assert read_logs(tmp_path, "ns", "p", "main", tail=2) == "two\nthree\n"
    assert read_logs(tmp_path, "ns", "p", "main", previous=True) == "old\n"
    assert previous_states(tmp_path)["u1"]["name"] == "p"
    with pytest.raises(FileNotFoundError):
        read_logs(tmp_path, "ns", "p", "sidecar")


def test_claim_resolves_to_its_persistent_volumes_host_folder(tmp_path: Path) -> None:
    source = DictObjectSource(claims={("ns", "models"): str(tmp_path / "models")})
    builder = VolumeBuilder(tmp_path / "pod", source, None)
    claim = {"name": "model-cache", "persistentVolumeClaim": {"claimName": "models"}}
    paths = builder.build(pod([claim]), PodRuntime("10.0.0.1"))
    assert paths == {"model-cache": tmp_path / "models"}
    unbound = {"name": "other", "persistentVolumeClaim": {"claimName": "missing"}}
    with pytest.raises(ContainerConfigError, match='"missing" is not bound'):
        builder.build(pod([unbound]), PodRuntime("10.0.0.1"))
