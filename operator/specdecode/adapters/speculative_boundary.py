"""Where a speculative config crosses between the wire and the domain, each way once.

The domain decides on its own `SpeculativeSetting` (`domain.speculative_setting`), never
the wire's `SpeculativeConfig`, so a second API version does not reach into the rules
(issue 35). Here, not in the reconciler: the first config to cross is the adopted source's
(`workload_source`, an adapter), and the reconciler's boundaries (`observe.state_of`,
`status_boundary.status_of`, `analysis_boundary.plan_of`) sit above and use it too.
"""

from __future__ import annotations

from specdecode.api.speculative import SpeculativeConfig
from specdecode.domain.speculative_setting import SpeculativeSetting


def setting_of(config: SpeculativeConfig | None) -> SpeculativeSetting | None:
    """The wire's config as the domain reads it (None: plain decoding)."""
    if config is None:
        return None
    schedule = config.num_speculative_tokens_per_batch_size
    return SpeculativeSetting(
        method=config.method,
        num_speculative_tokens=config.num_speculative_tokens,
        schedule=None if schedule is None else [list(entry) for entry in schedule],
        document=config.to_wire(),
    )


def config_of(setting: SpeculativeSetting | None) -> SpeculativeConfig | None:
    """The domain's setting back as the wire's config, validated as the CRD validates it."""
    return None if setting is None else SpeculativeConfig.model_validate(setting.document)
