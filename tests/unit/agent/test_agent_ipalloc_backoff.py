"""Pod IP allocation and the crash-loop back-off schedule."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from localcluster.agent.backoff import BackoffPolicy, scale_from_env
from localcluster.agent.ipalloc import (
    AddressesExhausted,
    PodIPAllocator,
    check_bindable,
    subnet_for,
)

pytestmark = pytest.mark.unit


def test_addresses_are_unique_stable_and_freed() -> None:
    ips = PodIPAllocator()
    first, second = ips.allocate("a"), ips.allocate("b")
    assert (first, second) == ("127.0.0.2", "127.0.0.3")
    assert ips.allocate("a") == first
    ips.release("a")
    assert ips.allocate("c") == "127.0.0.4"  # a freed address is not reused at once
    assert "127.0.0.2" not in ips.in_use().values()


def test_all_253_addresses_then_exhaustion_then_reuse() -> None:
    ips = PodIPAllocator()
    addresses = {ips.allocate(f"pod-{n}") for n in range(253)}
    assert len(addresses) == 253
    assert addresses == {f"127.0.0.{n}" for n in range(2, 255)}
    with pytest.raises(AddressesExhausted):
        ips.allocate("one-too-many")
    ips.release("pod-100")
    assert ips.allocate("late") == "127.0.0.102"


def test_reserve_refuses_an_address_held_by_another_pod() -> None:
    ips = PodIPAllocator()
    assert ips.reserve("old", "127.0.0.50")
    assert not ips.reserve("other", "127.0.0.50")
    assert ips.allocate("old") == "127.0.0.50"


def test_backoff_schedule_doubles_to_five_minutes() -> None:
    policy = BackoffPolicy()
    delays = [policy.delay_before_restart(n) for n in range(1, 10)]
    assert delays == [0.0, 10.0, 20.0, 40.0, 80.0, 160.0, 300.0, 300.0, 300.0]
    assert policy.resets_after(600.0) and not policy.resets_after(599.0)


def test_backoff_scale_shrinks_everything() -> None:
    policy = BackoffPolicy(scale=0.01)
    assert policy.delay_before_restart(3) == pytest.approx(0.2)
    assert policy.resets_after(6.0)
    assert scale_from_env({"SPECDECODE_AGENT_BACKOFF_SCALE": "0.05"}) == 0.05
    assert scale_from_env({}) == 1.0
    with pytest.raises(ValueError, match="must be positive"):
        scale_from_env({"SPECDECODE_AGENT_BACKOFF_SCALE": "0"})


def test_other_subnets_skip_the_node_address() -> None:
    ips = PodIPAllocator("10.244.0.0/24")
    assert ips.first_address == "10.244.0.2"
    assert ips.allocate("a") == "10.244.0.2"
    assert not ips.reserve("b", "127.0.0.5")  # outside the subnet


def test_an_address_that_is_not_local_fails_loudly() -> None:
    with pytest.raises(SystemExit, match="not local"):
        check_bindable("198.51.100.2")
    check_bindable("127.0.0.2")


def test_default_subnets_are_stable_per_state_dir_and_differ_between_clusters(
    tmp_path: Path,
) -> None:
    first = subnet_for(tmp_path / "a")
    assert first == subnet_for(tmp_path / "a")
    assert first != subnet_for(tmp_path / "b")
    network = ipaddress.IPv4Network(first)
    assert network.prefixlen == 24 and network.subnet_of(ipaddress.IPv4Network("127.0.0.0/8"))
    assert not network.subnet_of(ipaddress.IPv4Network("127.0.0.0/16"))
