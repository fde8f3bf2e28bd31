"""A speculative config crosses the boundary and back unchanged, and is named alike on both
sides (`adapters.speculative_boundary`, `domain.speculative_setting`).

Why: the status written after a reconcile is the wire config the domain's setting converts
back to, and the shadows' readiness compares the fingerprint the domain computes with the
one the renderers label them with; a difference would restart analyses or stall them.
"""

from __future__ import annotations

from typing import Any

import pytest

from specdecode.adapters.speculative_boundary import config_of, setting_of
from specdecode.api.speculative import SpeculativeConfig, SpeculativeMethod, fingerprint_of
from specdecode.domain.speculative_setting import SpeculativeSetting
from specdecode.vocabulary import SCHEDULE

pytestmark = pytest.mark.unit

# The methods whose config names a draft model (the others must not).
WITH_MODEL = frozenset(
    {
        SpeculativeMethod.EAGLE,
        SpeculativeMethod.EAGLE3,
        SpeculativeMethod.DRAFT_MODEL,
        SpeculativeMethod.DFLASH,
        SpeculativeMethod.MEDUSA,
        SpeculativeMethod.MLP_SPECULATOR,
    }
)
SCHEDULED = [[1, 8, 4], [9, 64, 2], [65, 4096, 0]]


def wire_config(method: SpeculativeMethod, **more: Any) -> SpeculativeConfig:
    """A valid config of `method` with k = 4 and the settings `more`."""
    document: dict[str, Any] = {"method": method.value, "num_speculative_tokens": 4, **more}
    if method in WITH_MODEL:
        document["model"] = "org/draft"
    return SpeculativeConfig.model_validate(document)


CONFIGS = [
    *(wire_config(method) for method in SpeculativeMethod),
    wire_config(SpeculativeMethod.EAGLE3, **{SCHEDULE: SCHEDULED}),
    wire_config(SpeculativeMethod.NGRAM, prompt_lookup_max=5, prompt_lookup_min=2),
    wire_config(
        SpeculativeMethod.SUFFIX,
        suffix_decoding_max_tree_depth=24,
        suffix_decoding_min_token_prob=0.1,
        **{SCHEDULE: [[1, 4096, 2]]},
    ),
]
IDS = [f"{c.method.value}-{c.fingerprint()}" for c in CONFIGS]


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_a_config_comes_back_from_the_domain_as_it_went(config: SpeculativeConfig) -> None:
    setting = setting_of(config)
    assert setting is not None
    back = config_of(setting)
    assert back == config
    assert back is not None and back.to_wire() == config.to_wire()


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_the_domain_names_a_config_as_the_wire_does(config: SpeculativeConfig) -> None:
    setting = setting_of(config)
    assert setting is not None
    assert setting.fingerprint() == config.fingerprint() == fingerprint_of(setting)
    assert setting.to_cli_json() == config.to_cli_json()
    assert (setting.method, setting.num_speculative_tokens) == (
        config.method,
        config.num_speculative_tokens,
    )
    assert setting.schedule == config.num_speculative_tokens_per_batch_size


def test_plain_decoding_stays_none_both_ways() -> None:
    assert setting_of(None) is None
    assert config_of(None) is None
    assert fingerprint_of(None) == "none"


def test_a_schedule_offered_in_the_domain_is_the_wire_config_with_that_schedule() -> None:
    """`analyzing.offered_config` builds the offer in the domain: it must be the config the
    wire validates, under the fingerprint the wire gives it."""
    config = wire_config(SpeculativeMethod.EAGLE3)
    setting = setting_of(config)
    assert setting is not None
    offer = setting.with_schedule(SCHEDULED)
    wire = SpeculativeConfig.model_validate({**config.to_wire(), SCHEDULE: SCHEDULED})
    assert offer.fingerprint() == wire.fingerprint()
    assert config_of(offer) == wire
    assert offer == setting_of(wire)
    assert setting.schedule is None  # the candidate itself is unchanged


@pytest.mark.parametrize(
    ("batch", "possible"),
    [(1, False), (8, False), (64, False), (65, True), (4096, True), (None, True)],
)
def test_k_zero_is_possible_where_the_schedule_gives_it(batch: int | None, possible: bool) -> None:
    setting = setting_of(wire_config(SpeculativeMethod.EAGLE3, **{SCHEDULE: SCHEDULED}))
    assert setting is not None
    assert setting.k_zero_possible_at(batch) is possible


def test_without_a_schedule_k_zero_is_never_possible() -> None:
    setting = setting_of(wire_config(SpeculativeMethod.NGRAM))
    assert isinstance(setting, SpeculativeSetting)
    assert not setting.k_zero_possible_at(None)
    assert not setting.k_zero_possible_at(1)
