"""Expert reuse in the MoE union, and the published MoE rows (benchmarks/calibration_moe.py).

Reuse 0 must be today's uniform union exactly; a positive reuse shrinks the union a verify
reads. The published rows read so far (SGLang, Qwen3-30B-A3B on 2x H100, EAGLE-3 chains of
k=3) are losses that the step model already over-predicts under the uniform union, so they
give no support for a positive reuse: the tests pin both facts, so a later fit must move
them knowingly.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

from calibration_moe import PUBLISHED_MOE, PublishedMoeRow, predicted_speedup

from specdecode_sim.profiles import MODELS
from specdecode_sim.steptime import decode_shape, experts_touched, weight_bytes_read

pytestmark = pytest.mark.unit

QWEN = MODELS["qwen3-30b-a3b"]


def test_reuse_zero_is_the_uniform_union_and_reuse_shrinks_it() -> None:
    uniform = dataclasses.replace(QWEN, expert_reuse=0.0)
    for tokens in (1, 4, 32, 1024):
        assert experts_touched(uniform, tokens) == pytest.approx(
            128 * (1 - (1 - 8 / 128) ** tokens)
        )
    reused = dataclasses.replace(QWEN, expert_reuse=0.5)
    # One token reads its own top-8 whatever the reuse; more tokens read fewer experts.
    assert experts_touched(reused, 1) == pytest.approx(8.0)
    assert experts_touched(reused, 4) < experts_touched(uniform, 4)
    verify = decode_shape(1, 3, 1024)
    assert weight_bytes_read(reused, verify) < weight_bytes_read(uniform, verify)


@pytest.mark.parametrize("reuse", [-0.1, 1.0])
def test_a_reuse_share_outside_zero_to_one_is_refused_naming_the_field(reuse: float) -> None:
    with pytest.raises(ValueError, match="expert_reuse"):
        dataclasses.replace(QWEN, expert_reuse=reuse)


@pytest.mark.parametrize("row", PUBLISHED_MOE, ids=lambda row: row.label)
def test_published_moe_row_keeps_its_sign(row: PublishedMoeRow) -> None:
    simulated = predicted_speedup(row)
    print(f"{row.label}: simulated {simulated:.3f}, published {row.speedup:.3f}")
    assert (simulated > 1.0) == (row.speedup > 1.0)


@pytest.mark.parametrize("row", PUBLISHED_MOE, ids=lambda row: row.label)
def test_published_moe_row_gives_no_support_for_reuse(row: PublishedMoeRow) -> None:
    # Both rows lie below the uniform union's prediction (2x H100 bs 1: 0.95 against 0.72;
    # bs 4: 0.88 against 0.79): any reuse moves the prediction further from them.
    uniform = predicted_speedup(row, 0.0)
    assert row.speedup < uniform < predicted_speedup(row, 0.3)
    assert QWEN.expert_reuse == 0.0


def test_the_bs4_row_is_within_twenty_percent_and_bs1_is_not() -> None:
    ratios = {row.batch: predicted_speedup(row) / row.speedup for row in PUBLISHED_MOE}
    assert 0.8 <= ratios[4] <= 1.2
    # Known miss: SGLang's spec step at bs 1 costs 11.6 ms against the model's 7.2 ms.
    assert ratios[1] > 1.2
