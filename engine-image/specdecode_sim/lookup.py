"""n-gram (prompt lookup) and suffix proposals over the real token history.

NgramIndex remembers, for every n-gram that already has a following token, where it
last occurred, so a proposal is a dictionary lookup instead of a scan. The n-gram
proposer takes the longest suffix match with n in [prompt_lookup_min, prompt_lookup_max]
and proposes up to k following tokens (vLLM's rule, capped by max_model_len). The
suffix proposer matches up to `max_depth` tokens, also against a cache of earlier
responses, and proposes at most max_spec_factor x match length tokens.
"""

from __future__ import annotations

from collections import deque


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


class SuffixCache:
    """Responses of finished requests, FIFO-evicted, searchable like a request's history."""

    def __init__(self, max_depth: int, max_cached_requests: int) -> None:
        self.max_depth = max_depth
        self.max_cached_requests = max_cached_requests
        self._responses: deque[NgramIndex] = deque()

    def add(self, response: list[str]) -> None:
        """Remember one finished response (no-op when the global cache is disabled)."""
        if self.max_cached_requests <= 0:
            return
        index = NgramIndex(1, self.max_depth)
        index.extend(response)
        self._responses.append(index)
        while len(self._responses) > self.max_cached_requests:
            self._responses.popleft()

    def best(self, history: list[str]) -> tuple[int, NgramIndex, int] | None:
        """Longest match over cached responses, most recent first."""
        best: tuple[int, NgramIndex, int] | None = None
        for index in reversed(self._responses):
            found = index.match(history)
            if found is not None and (best is None or found[0] > best[0]):
                best = (found[0], index, found[1])
        return best


def suffix_proposal(
    own: NgramIndex, cache: SuffixCache, k: int, max_spec_factor: float, max_model_len: int
) -> list[str]:
    """Suffix decoding: longest match in own history or cached responses, length-scaled."""
    k = min(k, max_model_len - len(own.tokens))
    if k <= 0:
        return []
    candidates: list[tuple[int, NgramIndex, int]] = []
    found = own.match(own.tokens)
    if found is not None:
        candidates.append((found[0], own, found[1]))
    cached = cache.best(own.tokens[-cache.max_depth :])
    if cached is not None:
        candidates.append(cached)
    if not candidates:
        return []
    length, index, start = max(candidates, key=lambda c: c[0])
    budget = min(k, int(max_spec_factor * length))
    return index.continuation(start, budget)
