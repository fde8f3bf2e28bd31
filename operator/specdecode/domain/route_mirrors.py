"""Gateway API RequestMirror filters on a route, as rules: which are ours, the JSON patch that
gives a route exactly the wanted mirrors, and why a route cannot carry them.

The route is the user's (or Argo CD's / Flux's): the operator owns only the mirror filters
toward its own shadow (or splitter) Services; each changed rule's `filters` is written by a
JSON patch guarded by the route's resourceVersion, so a concurrent edit is never
overwritten. Pure: `adapters.kube.route_mirrors` lists and patches. Rationale in full:
docs/internals.md.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# The rollouts whose mirrors the operator wrote on a route (comma-separated names).
MIRRORS_ANNOTATION = "specdecode.io/mirrors"
JsonObject = Mapping[str, Any]
# A namespace's HTTPRoutes as listed, or why they could not be listed.
Routes = Sequence[JsonObject] | str


@dataclass(frozen=True)
class MirrorWanted:
    """The mirrors one rollout wants on its route now (empty `services`: none anywhere)."""

    route: str | None  # the HTTPRoute named by the spec (None: not a Mirror rollout)
    production_service: str
    own_services: frozenset[str]  # every shadow Service of the rollout, mirrored or not
    rollout: str = ""  # the name the route's mark records
    # Services whose mirrors are ours only on a route marked for `rollout` (the splitter's)
    marked_services: frozenset[str] = frozenset()
    services: tuple[str, ...] = ()  # mirror targets while a stage runs
    port: int = 0  # the shadow Services' port (only read when `services` is not empty)
    percent: int = 100


def mirror_filter(service: str, port: int, percent: int) -> dict[str, Any]:
    """One RequestMirror filter, with the defaults the API server would add spelled out.

    Why explicit `group` and `kind`: the stored object carries them, and comparing like with
    like keeps a converged route from being patched on every reconcile.
    """
    backend = {"group": "", "kind": "Service", "name": service, "port": port}
    return {"type": "RequestMirror", "requestMirror": {"backendRef": backend, "percent": percent}}


def _is_service(ref: JsonObject, name: str | Collection[str], namespace: str) -> bool:
    names = {name} if isinstance(name, str) else name
    return (
        ref.get("name") in names
        and ref.get("kind", "Service") == "Service"
        and ref.get("group", "") == ""
        and ref.get("namespace", namespace) == namespace
    )


def is_owned_mirror(item: JsonObject, own_services: Collection[str], namespace: str) -> bool:
    """A RequestMirror filter toward one of the rollout's shadow Services: ours to manage."""
    if item.get("type") != "RequestMirror":
        return False
    backend = (item.get("requestMirror") or {}).get("backendRef") or {}
    return _is_service(backend, own_services, namespace)


def routes_to(rule: JsonObject, service: str, namespace: str) -> bool:
    """Whether the rule sends (some of) its requests to `service`."""
    return any(_is_service(ref, service, namespace) for ref in rule.get("backendRefs") or [])


def route_marks(route: JsonObject) -> frozenset[str]:
    """The rollouts whose mirrors the operator wrote on `route` (its mark)."""
    annotations = (route.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(MIRRORS_ANNOTATION) or ""
    return frozenset(name for name in value.split(",") if name)


def filters_patch(route: JsonObject, wanted: MirrorWanted) -> list[dict[str, Any]]:
    """JSON patch operations that give every rule exactly the wanted mirrors of ours.

    Rules toward the production Service get `wanted.services` mirrors (only on the route the
    spec names); every other rule, and every other route, keeps none of ours. Filters of
    anyone else stay as they are and where they are; a filter toward a marked service
    (the splitter's) is ours only on a route marked for the rollout. The mark follows:
    set while the route carries mirrors of ours, dropped with the last. Empty: the route
    already converged.
    """
    metadata, spec = route.get("metadata") or {}, route.get("spec") or {}
    namespace = metadata.get("namespace", "")
    marks = route_marks(route)
    marked = wanted.rollout in marks
    ours = wanted.own_services | (wanted.marked_services if marked else frozenset())
    mirrors = [mirror_filter(s, wanted.port, wanted.percent) for s in wanted.services]
    on_named_route = metadata.get("name") == wanted.route
    operations: list[dict[str, Any]] = []
    carries_ours = False
    for index, rule in enumerate(spec.get("rules") or []):
        current = list(rule.get("filters") or [])
        kept = [f for f in current if not is_owned_mirror(f, ours, namespace)]
        to_production = routes_to(rule, wanted.production_service, namespace)
        added = mirrors if on_named_route and to_production else []
        carries_ours = carries_ours or bool(added)
        target = kept + added
        if target == current:
            continue
        op = "replace" if "filters" in rule else "add"
        operations.append({"op": op, "path": f"/spec/rules/{index}/filters", "value": target})
    if carries_ours != marked and wanted.rollout:
        operations.extend(_mark_patch(metadata, marks, wanted.rollout, carries_ours))
    if operations:
        version = metadata.get("resourceVersion", "")
        operations.insert(0, {"op": "test", "path": "/metadata/resourceVersion", "value": version})
    return operations


def _mark_patch(
    metadata: JsonObject, marks: frozenset[str], rollout: str, mark: bool
) -> list[dict[str, Any]]:
    """The operation that adds `rollout` to the route's mark, or removes it."""
    names = marks | {rollout} if mark else marks - {rollout}
    key = "/metadata/annotations/" + MIRRORS_ANNOTATION.replace("~", "~0").replace("/", "~1")
    if not names:
        return [{"op": "remove", "path": key}]
    value = ",".join(sorted(names))
    if "annotations" not in metadata or metadata["annotations"] is None:
        return [{"op": "add", "path": "/metadata/annotations",
                 "value": {MIRRORS_ANNOTATION: value}}]  # fmt: skip
    return [{"op": "add", "path": key, "value": value}]


def route_problem(routes: Routes, wanted: MirrorWanted) -> str | None:
    """Why the spec's route cannot carry mirrors (unreadable, absent, no rule to production).

    None when it can, or when the rollout is not a Mirror rollout (`wanted.route` None).
    """
    if wanted.route is None:
        return None
    if isinstance(routes, str):
        return routes
    route = next((r for r in routes if r.get("metadata", {}).get("name") == wanted.route), None)
    where = f"HTTPRoute {wanted.route}"
    if route is None:
        return f"{where} does not exist in the rollout's namespace"
    namespace = route.get("metadata", {}).get("namespace", "")
    rules = (route.get("spec") or {}).get("rules") or []
    if not any(routes_to(rule, wanted.production_service, namespace) for rule in rules):
        return f"{where} has no rule whose backendRefs include Service {wanted.production_service}"
    if wanted.rollout not in route_marks(route) and (
        theirs := _unmarked_mirror_target(rules, wanted.marked_services, namespace)
    ):
        # Taking it over would strip it when the stage ends; adding ours beside it would
        # copy every request twice to the splitter.
        return (
            f"{where} already mirrors to Service {theirs} with a filter the operator did not "
            "write: remove it (the operator adds its own for httpRoute), or leave httpRoute "
            "unset and keep yours"
        )
    return None


def _unmarked_mirror_target(
    rules: list[JsonObject], services: Collection[str], namespace: str
) -> str | None:
    """The marked service (the splitter) a rule of an unmarked route already mirrors to."""
    for rule in rules:
        for item in rule.get("filters") or []:
            if is_owned_mirror(item, services, namespace):
                return str(item["requestMirror"]["backendRef"]["name"])
    return None
