"""Render a tuning trial's engines: a baseline and a candidate, as a rollout's shadows are.

A trial is one cell of a tuning (a config at a concurrency). Its children are rendered by
the rollout's own templates and contexts (`render`), so a trial runs exactly the engines a
rollout's analysis would; there is no production Deployment, and nothing serves users.
Names are `<trial>-baseline` and `<trial>-candidate`, where the trial name is derived from
the tuning and the cell (`trial_name`), so a restarted operator finds them again.
"""

from __future__ import annotations

import hashlib
from typing import Any

from specdecode.adapters.render import (
    Owner,
    render_engine,
    render_template,
    service_context,
    template_environment,
)
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.api.tuning import KIND as TUNING_KIND
from specdecode.domain.observations import ChildRole

# `<trial>-candidate` must be a DNS-1035 label (63): the trial name is at most 52.
MAX_PREFIX = 40


def trial_name(tuning: str, uid: str, generation: int, config: str, load: int) -> str:
    """A stable, short, DNS-safe name for one cell's trial in one generation of the spec
    (an edited spec is a new question: its trials never reuse an older one's data). The
    tuning's uid is in the hash: two tunings whose names share a prefix never collide."""
    digest = hashlib.sha256(f"{uid}/{generation}/{config}@{load}".encode()).hexdigest()[:10]
    return f"{tuning[:MAX_PREFIX].rstrip('-')}-t{digest}"


def trial_owner(tuning: str, namespace: str, uid: str, trial: str) -> Owner:
    """Children named after the trial, owned by the tuning."""
    return Owner(trial, namespace, uid, kind=TUNING_KIND, owner_name=tuning)


def render_trial_children(owner: Owner, spec: SpecDecodeRolloutSpec) -> list[dict[str, Any]]:
    """Baseline (plain decoding) and candidate (`spec.speculative`): Deployment, Service."""
    templates = template_environment()
    children: list[dict[str, Any]] = []
    for role, config in ((ChildRole.BASELINE, None), (ChildRole.CANDIDATE, spec.speculative)):
        children.append(render_engine(templates, owner, spec, role, config, serving=False))
        children.append(
            render_template(templates, "service.yaml.j2", service_context(owner, spec, role))
        )
    return children
