"""What one HTTPRoute says about a request: which rule, which backend, which mirrors.

Pure (dicts in, decisions out), so the data plane (gateway.py) stays small and the route
semantics can be read in one place. Supported, as the Gateway API spec defines them: path
matches of type Exact and PathPrefix (a rule without matches matches everything), method and
exact header matches, the spec's precedence between matching rules (Exact path, then the
longest prefix, then method, then more header matches, then list order), backendRefs to
Services chosen by weight, and rule-level RequestMirror filters with ``percent`` or
``fraction`` (neither = 100 %). Hostnames, parentRefs, other filter types, query-parameter
and RegularExpression matches are ignored (such a match never matches).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_MATCH: Mapping[str, Any] = {"path": {"type": "PathPrefix", "value": "/"}}


@dataclass(frozen=True)
class BackendRef:
    """A Service port of a backendRef (or a mirror's backendRef)."""

    namespace: str
    name: str
    port: int
    weight: int = 1

    @property
    def key(self) -> str:
        """How stats and endpoint tables name this backend: ``<ns>/<service>:<port>``."""
        return f"{self.namespace}/{self.name}:{self.port}"


@dataclass(frozen=True)
class Match:
    """One HTTPRouteMatch: all of its conditions must hold."""

    path_type: str
    path: str
    method: str | None
    headers: tuple[tuple[str, str], ...]

    def matches(self, path: str, method: str, headers: Mapping[str, str]) -> bool:
        if self.method is not None and self.method != method.upper():
            return False
        if any(headers.get(name) != value for name, value in self.headers):
            return False
        if self.path_type == "Exact":
            return path == self.path
        if self.path_type == "PathPrefix":
            prefix = self.path.rstrip("/")  # element-wise: /foo matches /foo/bar, not /foobar
            return path == prefix or path.startswith(prefix + "/")
        return False

    def precedence(self) -> tuple[int, int, int, int]:
        """Sort key: smaller wins (spec order of HTTPRouteRule.matches)."""
        exact = 0 if self.path_type == "Exact" else 1
        return (exact, -len(self.path), 0 if self.method else 1, -len(self.headers))


@dataclass(frozen=True)
class Mirror:
    """A RequestMirror filter: copy ``numerator/denominator`` of the requests to ``backend``."""

    backend: BackendRef
    numerator: int
    denominator: int

    def sampled(self, rng: random.Random) -> bool:
        """Whether this request is mirrored (independently per request and per filter)."""
        return rng.randrange(self.denominator) < self.numerator


@dataclass(frozen=True)
class Rule:
    index: int
    matches: tuple[Match, ...]
    backends: tuple[BackendRef, ...]
    mirrors: tuple[Mirror, ...]

    def pick_backend(self, rng: random.Random) -> BackendRef | None:
        """A backendRef drawn by weight; None if there is none with a positive weight."""
        weighted = [backend for backend in self.backends if backend.weight > 0]
        if not weighted:
            return None
        return rng.choices(weighted, weights=[b.weight for b in weighted])[0]


@dataclass(frozen=True)
class Route:
    """A parsed HTTPRoute at one generation."""

    namespace: str
    name: str
    generation: int
    rules: tuple[Rule, ...]

    def rule_for(self, path: str, method: str, headers: Mapping[str, str]) -> Rule | None:
        """The rule the spec's precedence picks for this request, or None (404)."""
        candidates = [
            (match.precedence(), rule.index, rule)
            for rule in self.rules
            for match in rule.matches
            if match.matches(path, method, headers)
        ]
        return min(candidates, key=lambda c: (c[0], c[1]))[2] if candidates else None

    def backends(self) -> set[BackendRef]:
        """Every Service port the route can send to, primary or mirror (weights dropped)."""
        refs = {b for r in self.rules for b in r.backends}
        refs |= {m.backend for r in self.rules for m in r.mirrors}
        return {BackendRef(b.namespace, b.name, b.port) for b in refs}


def _backend(ref: Mapping[str, Any], namespace: str) -> BackendRef | None:
    if ref.get("group", "") not in ("", "core") or ref.get("kind", "Service") != "Service":
        return None
    port = ref.get("port")
    if port is None:
        return None
    weight = int(ref.get("weight", 1))
    return BackendRef(ref.get("namespace") or namespace, ref["name"], int(port), weight)


def _match(spec: Mapping[str, Any]) -> Match:
    path = spec.get("path") or {}
    headers = tuple(
        (h["name"].lower(), h["value"])
        for h in spec.get("headers") or []
        if h.get("type", "Exact") == "Exact"
    )
    return Match(
        path_type=path.get("type", "PathPrefix"),
        path=path.get("value", "/"),
        method=spec.get("method"),
        headers=headers,
    )


def _mirror(spec: Mapping[str, Any], namespace: str) -> Mirror | None:
    backend = _backend(spec.get("backendRef") or {}, namespace)
    if backend is None:
        return None
    if "percent" in spec:
        return Mirror(backend, int(spec["percent"]), 100)
    fraction = spec.get("fraction")
    if fraction is not None:
        return Mirror(backend, int(fraction["numerator"]), int(fraction.get("denominator", 100)))
    return Mirror(backend, 1, 1)


def parse_route(obj: Mapping[str, Any]) -> Route:
    """An HTTPRoute object (as the API server returns it) as a Route."""
    meta, spec = obj["metadata"], obj.get("spec") or {}
    namespace = meta["namespace"]
    rules = []
    for index, rule in enumerate(spec.get("rules") or [{}]):
        matches = tuple(_match(m) for m in rule.get("matches") or [DEFAULT_MATCH])
        refs = (_backend(ref, namespace) for ref in rule.get("backendRefs") or [])
        filters = (f for f in rule.get("filters") or [] if f.get("type") == "RequestMirror")
        mirrors = (_mirror(f.get("requestMirror") or {}, namespace) for f in filters)
        rules.append(
            Rule(
                index=index,
                matches=matches,
                backends=tuple(ref for ref in refs if ref is not None),
                mirrors=tuple(mirror for mirror in mirrors if mirror is not None),
            )
        )
    return Route(namespace, meta["name"], int(meta.get("generation", 0)), tuple(rules))
