"""Suffix decoding's structure: a depth-limited suffix index over token documents.

Suffix decoding (Oliaro et al., "SuffixDecoding", the `arctic-inference` package vLLM
uses) keeps a suffix tree of depth `max_tree_depth` over every cached response plus one
per request over its prompt and output, matches the longest suffix of the current
context, and speculates the continuation most often seen after it (a child is followed
while its frequency share is >= `min_token_prob`), at most `max_spec_factor x match
length` tokens.

A pointer-based suffix tree costs tens of Python objects per token (tens of millions
for 10,000 cached responses), so the tree is stored flattened: the nodes at the anchor
depths (2 and 4) are hash-map keys (the hash of the n-gram on the path from the root),
each holding the positions of its most recent `fanout` occurrences; deeper levels are
read straight from the documents by extending a match backwards, up to `max_depth`.
Lookup cost is therefore bounded by anchors + fanout x max_depth token comparisons,
independent of how many responses are cached; insertion and FIFO eviction cost
anchors x fanout per token. Memory: about two small ints per cached token.
`operations` counts the probes and comparisons so tests can check that bound without
timing anything.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

ANCHORS = (4, 2)
FANOUT = 16
_POSITION_BITS = 32
_POSITION_MASK = (1 << _POSITION_BITS) - 1

# A node holds one encoded occurrence (document << 32 | successor position) or a tuple of
# the `fanout` most recent ones; keys are hashes of the n-gram (collisions only shorten
# a match, since every match is re-checked token by token). Tuples of ints, int keys and
# finished documents stored as tuples of str are all untracked by Python's cyclic GC:
# with lists, a 10,000-response cache doubled the engine's CPU per token in GC passes.
Node = int | tuple[int, ...]


class SuffixIndex:
    """Documents (responses, or one request's history) indexed by their short suffixes."""

    def __init__(
        self, max_depth: int, anchors: tuple[int, ...] = ANCHORS, fanout: int = FANOUT
    ) -> None:
        self.max_depth = max_depth
        self.anchors = tuple(sorted({min(a, max_depth) for a in anchors if a >= 1}, reverse=True))
        self.fanout = fanout
        self.operations = 0
        self._documents: dict[int, Sequence[str]] = {}
        self._nodes: dict[int, Node] = {}
        self._next_id = 0

    def __len__(self) -> int:
        return len(self._documents)

    def new_document(self) -> int:
        """Open an empty document (a request's history grows with `append`)."""
        document = self._next_id
        self._next_id += 1
        self._documents[document] = []
        return document

    def add_document(self, tokens: list[str]) -> int:
        """Index a finished document and store it immutably (GC-untracked)."""
        document = self.new_document()
        self.append(document, tokens)
        self._documents[document] = tuple(self._documents[document])
        return document

    def append(self, document: int, tokens: list[str]) -> None:
        """Extend an open document, indexing every anchor n-gram that now has a successor."""
        text = self._documents[document]
        assert isinstance(text, list), "finished documents are immutable"
        nodes, fanout, anchors = self._nodes, self.fanout, self.anchors
        base = document << _POSITION_BITS
        for token in tokens:
            end = len(text)
            for n in anchors:
                if n > end:
                    continue
                key = hash(tuple(text[end - n : end]))
                entry = base | end
                node = nodes.get(key)
                if node is None:
                    nodes[key] = entry
                elif isinstance(node, int):
                    nodes[key] = (node, entry)
                elif len(node) < fanout:
                    nodes[key] = (*node, entry)
                else:
                    nodes[key] = (*node[1:], entry)
            text.append(token)

    def remove(self, document: int) -> None:
        """Forget the oldest document (FIFO eviction): drop its occurrences from every node.

        Occurrences are appended in document order, so the oldest document's are at the
        front of each node: eviction pops them in O(1) per n-gram instead of filtering."""
        text = self._documents.pop(document)
        nodes = self._nodes
        for end in range(1, len(text)):
            for n in self.anchors:
                if n > end:
                    continue
                key = hash(tuple(text[end - n : end]))
                node = nodes.get(key)
                if node is None:
                    continue
                if isinstance(node, int):
                    if node >> _POSITION_BITS == document:
                        del nodes[key]
                    continue
                drop = 0
                while drop < len(node) and node[drop] >> _POSITION_BITS == document:
                    drop += 1
                if drop == len(node):
                    del nodes[key]
                elif drop == len(node) - 1:
                    nodes[key] = node[-1]
                elif drop:
                    nodes[key] = node[drop:]

    def tokens(self, document: int) -> Sequence[str]:
        """A document's tokens."""
        return self._documents[document]

    def match(self, context: list[str], min_token_prob: float) -> tuple[int, int, int] | None:
        """(match length, document, continuation position) for the longest suffix of
        `context` seen in the index whose most frequent successor has a share of at least
        `min_token_prob` among the sampled occurrences; None when nothing qualifies."""
        node: Node | None = None
        for n in self.anchors:
            if n > len(context):
                continue
            self.operations += 1
            node = self._nodes.get(hash(tuple(context[-n:])))
            if node is not None:
                break
        if node is None:
            return None
        documents = self._documents
        best_length = 0
        best: list[tuple[Sequence[str], int, int]] = []
        for entry in [node] if isinstance(node, int) else node:
            document, position = entry >> _POSITION_BITS, entry & _POSITION_MASK
            text = documents.get(document)
            if text is None or position >= len(text):
                continue
            length = 0
            limit = min(self.max_depth, position, len(context))
            while length < limit and text[position - 1 - length] == context[-1 - length]:
                length += 1
            self.operations += length + 1
            if length > best_length:
                best_length, best = length, [(text, document, position)]
            elif length == best_length and length:
                best.append((text, document, position))
        if not best:
            return None
        votes: dict[str, int] = {}
        for text, _, position in best:
            votes[text[position]] = votes.get(text[position], 0) + 1
        successor, count = max(votes.items(), key=lambda item: item[1])
        if count / len(best) < min_token_prob:
            return None
        for text, document, position in reversed(best):
            if text[position] == successor:
                return best_length, document, position
        return None


class ResponseCache:
    """The global cache of finished responses, FIFO-bounded by `max_cached_requests`."""

    def __init__(self, max_depth: int, max_cached_requests: int) -> None:
        self.index = SuffixIndex(max_depth)
        self.max_cached_requests = max_cached_requests
        self._order: deque[int] = deque()

    def add(self, response: list[str]) -> None:
        """Remember one finished response (no-op when the global cache is disabled)."""
        if self.max_cached_requests <= 0 or not response:
            return
        self._order.append(self.index.add_document(response))
        while len(self._order) > self.max_cached_requests:
            self.index.remove(self._order.popleft())

    def __len__(self) -> int:
        return len(self._order)
