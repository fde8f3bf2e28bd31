"""n-gram (prompt lookup) and suffix proposals over the real token history.

NgramIndex remembers, for every n-gram that already has a following token, where it
last occurred, so a proposal is a dictionary lookup instead of a scan. The n-gram
proposer takes the longest suffix match with n in [prompt_lookup_min, prompt_lookup_max]
and proposes up to k following tokens (vLLM's rule, capped by max_model_len). The
suffix proposer (structure in suffixindex.py) matches up to `max_depth` tokens in the
request's own history and in the global cache of earlier responses, and proposes at most
max_spec_factor x match length tokens.
"""

from __future__ import annotations

from specdecode_sim.suffixindex import ResponseCache, SuffixIndex


class NgramIndex:
    """Incremental index of n-gram -> latest start position with a continuation."""

    def __init__(self, min_n: int, max_n: int) -> None:
        self.min_n = min_n
        self.max_n = max_n
        self.tokens: list[str] = []
        self._latest: dict[tuple[str, ...], int] = {}

    def extend(self, tokens: list[str]) -> None:
        """Append tokens, indexing every n-gram that now has a following token."""
        for token in tokens:
            end = len(self.tokens)
            for n in range(self.min_n, self.max_n + 1):
                if end - n >= 0:
                    self._latest[tuple(self.tokens[end - n : end])] = end - n
            self.tokens.append(token)

    def match(self, suffix_source: list[str]) -> tuple[int, int] | None:
        """(match length, continuation start) for the longest suffix of `suffix_source`."""
        for n in range(min(self.max_n, len(suffix_source)), self.min_n - 1, -1):
            start = self._latest.get(tuple(suffix_source[-n:]))
            if start is not None:
                return n, start + n
        return None

    def continuation(self, start: int, count: int) -> list[str]:
        """Up to `count` tokens from `start`."""
        return self.tokens[start : start + count]


def ngram_proposal(index: NgramIndex, k: int, max_model_len: int) -> list[str]:
    """vLLM-style prompt lookup over this request's own prompt + output."""
    total = len(index.tokens)
    k = min(k, max_model_len - total)
    if total < index.min_n or k <= 0:
        return []
    found = index.match(index.tokens)
    if found is None:
        return []
    _, start = found
    return index.continuation(start, k)


def suffix_proposal(
    own: SuffixIndex,
    cache: ResponseCache,
    k: int,
    max_spec_factor: float,
    max_model_len: int,
    min_token_prob: float = 0.1,
) -> list[str]:
    """Suffix decoding: the longer match of the request's own tree and the global cache,
    speculating at most max_spec_factor x match length tokens (the method's rule)."""
    history = own.tokens(0)
    k = min(k, max_model_len - len(history))
    if k <= 0:
        return []
    context = list(history[-own.max_depth :])
    best: tuple[int, SuffixIndex, int, int] | None = None
    for index in (own, cache.index):
        found = index.match(context, min_token_prob)
        if found is not None and (best is None or found[0] > best[0]):
            best = (found[0], index, found[1], found[2])
    if best is None:
        return []
    length, index, document, start = best
    budget = min(k, int(max_spec_factor * length))
    return list(index.tokens(document)[start : start + budget])
