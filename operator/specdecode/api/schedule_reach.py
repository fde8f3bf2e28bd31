"""Whether a stage's load reaches the batch sizes a per-batch-size k schedule speculates at.

Why one expression for two uses: the analysis skips a Speedup gate only where the candidate
cannot speculate, and admission refuses a schedule no stage exercises; written apart, a
schedule could be promoted on the tail alone. Both read `off_through` (`rules`).
Rationale in full: docs/internals.md.
"""

from __future__ import annotations

from specdecode.api import rules as r
from specdecode.api.rules.expressions import truth
from specdecode.api.speculative import SpeculativeConfig
from specdecode.api.speculative_rules import MAX_SCHEDULE_ENTRIES
from specdecode.vocabulary import SCHEDULE, TrafficSourceType


def off_through(schedule: r.Ref, batch: r.Expr) -> r.Expr:
    """Every batch size from 1 to `batch` lies in a range of `schedule` with k = 0.

    Every range starting at or below `batch` has k = 0, each of them starts where the one
    before ended (no gap below `batch`), and one of them holds `batch` itself.
    """
    entry, i = r.Ref("e"), r.Ref("i")
    previous_end = r.Index(r.Index(schedule, r.Binary("-", i, r.lit(1))), r.lit(1))
    start = r.Index(r.Index(schedule, i), r.lit(0))
    return r.all_of(
        r.every(
            schedule,
            "e",
            r.implies(r.Binary("<=", entry[0], batch), r.Binary("==", entry[2], r.lit(0))),
        ),
        r.every(
            r.lit(list(range(1, MAX_SCHEDULE_ENTRIES))),
            "i",
            r.implies(
                r.all_of(r.Binary("<", i, r.size(schedule)), r.Binary("<=", start, batch)),
                r.Binary("==", start, r.Binary("+", previous_end, r.lit(1))),
            ),
        ),
        r.some(
            schedule,
            "e",
            r.all_of(r.Binary("<=", entry[0], batch), r.Binary("<=", batch, entry[1])),
        ),
    )


_OFF_THROUGH = off_through(r.Ref("schedule"), r.Ref("batch"))


def speculation_off_through(config: SpeculativeConfig | None, batch: int | None) -> bool:
    """Whether `config`'s schedule turns speculation off at every batch size from 1 to
    `batch`, so a stage at that concurrency cannot measure what speculation buys.

    False without a schedule (k drafts at every batch size), for plain decoding (no config:
    it is judged on whether it pays like any candidate) and for an unknown batch size (a
    requestRate stage: never skipped).
    """
    schedule = None if config is None else config.num_speculative_tokens_per_batch_size
    if schedule is None or batch is None:
        return False
    return truth(_OFF_THROUGH.value({"schedule": schedule, "batch": batch}))


SCHEDULE_REACH_MESSAGE = (
    f"speculative.{SCHEDULE}: no stage reaches a batch size that speculates (k > 0): every "
    "stage's concurrency lies where the schedule gives k = 0 from batch 1 up, so no stage "
    "measures the speculation being rolled out and no Speedup gate asking a gain is judged; "
    "add a stage whose concurrency reaches the smallest batch size with k > 0, or a "
    "requestRate stage"
)

_STAGE = r.Ref("s")
_MIRROR = TrafficSourceType.MIRROR.value
# On the rollout's spec (`self` is the spec: the schedule and the stages meet there).
SCHEDULE_REACH_RULES = r.RuleSet(
    (
        r.Rule(
            r.implies(
                r.all_of(r.Has(r.at("speculative")), r.Has(r.at(f"speculative.{SCHEDULE}"))),
                r.any_of(
                    r.Binary("==", r.at("analysis.traffic.source"), r.lit(_MIRROR)),
                    r.some(
                        r.at("analysis.stages"),
                        "s",
                        r.any_of(
                            r.Not(r.Has(_STAGE["concurrency"])),
                            r.Not(
                                off_through(r.at(f"speculative.{SCHEDULE}"), _STAGE["concurrency"])
                            ),
                        ),
                    ),
                ),
            ),
            SCHEDULE_REACH_MESSAGE,
            f".speculative.{SCHEDULE}",
        ),
    )
)
