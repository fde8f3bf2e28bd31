"""Whether a rollout's prompt set can be replayed: the rule observe and the load sync read.

Pure: the caller reads the set's text (`adapters.kube.prompt_source`); parsed here with the
parser the load pods use, so a bad line is a problem naming it before any load pod starts
(a Failed phase, never a pod crash-looping on it).
"""

from __future__ import annotations

from specdecode.api.traffic import TrafficSpec
from specdecode.domain.prompts import PromptSourceError, SamplingDefaults, parse_jsonl


def unusable(error: PromptSourceError) -> str:
    """How a prompt set that cannot be replayed is named (the read's or the parse's why)."""
    return f"prompt set unusable: {error}"


def prompt_text_problem(text: str | None, traffic: TrafficSpec) -> str | None:
    """Why the set's JSONL `text` cannot be replayed as `traffic` samples it, or None
    (it can; `text` None: the built-in prompts, nothing to parse)."""
    if text is None:
        return None
    sampling = SamplingDefaults(temperature=traffic.temperature, top_p=traffic.top_p)
    try:
        parse_jsonl(text, traffic.max_tokens, sampling)
    except PromptSourceError as error:
        return unusable(error)
    return None
