"""Whether a rollout's prompt set can be replayed: the rule observe and the load sync read.

Pure: the caller reads the set's text and the spec's sampling (`adapters.kube.prompt_source`);
parsed here with the parser the load pods use, so a bad line is a problem naming it before
any load pod starts (a Failed phase, never a pod crash-looping on it).
"""

from __future__ import annotations

from specdecode.domain.prompts import PromptSourceError, SamplingDefaults, parse_jsonl


def unusable(error: PromptSourceError) -> str:
    """How a prompt set that cannot be replayed is named (the read's or the parse's why)."""
    return f"prompt set unusable: {error}"


def prompt_text_problem(
    text: str | None, max_tokens: int, sampling: SamplingDefaults
) -> str | None:
    """Why the set's JSONL `text` cannot be replayed with the spec's `max_tokens` and
    `sampling`, or None (it can; `text` None: the built-in prompts, nothing to parse)."""
    if text is None:
        return None
    try:
        parse_jsonl(text, max_tokens, sampling)
    except PromptSourceError as error:
        return unusable(error)
    return None
