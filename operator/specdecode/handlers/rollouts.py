"""kopf handlers for SpecDecodeRollout: thin shims over `reconciler.reconcile`.

Changes (create, spec or annotation edits, operator resume) reconcile at once; a timer
reconciles every rollout periodically, which is the analysis clock and what repairs drift
of children. Nothing here sleeps or polls: a reconcile that cannot finish raises
`kopf.TemporaryError(delay=...)` and kopf retries it. Handlers are registered into an
explicit registry by `register_rollout_handlers`, so the timer's interval comes from the
settings rather than from import-time constants.
"""

from __future__ import annotations

from typing import Any

import kopf
from kubernetes.client import ApiException

from specdecode.api import GROUP, PLURAL, VERSION, TrafficSourceType
from specdecode.domain.decision import Decision
from specdecode.reconciler.mirror import observe_routes, steer_mirrors
from specdecode.reconciler.reconcile import RolloutRef, reconcile
from specdecode.reconciler.runtime import Runtime
from specdecode.settings import OperatorSettings

RESOURCE = (GROUP, VERSION, PLURAL)
RETRY_DELAY_SECONDS = 5.0


def runtime_of(memo: kopf.Memo) -> Runtime:
    """The Runtime the startup handler put into kopf's memo."""
    runtime: Runtime = memo["runtime"]
    return runtime


async def reconcile_body(body: kopf.Body, memo: kopf.Memo, logger: kopf.Logger) -> None:
    """Reconcile one rollout under its lock; API errors become kopf retries."""
    runtime = runtime_of(memo)
    meta = body.metadata
    ref = RolloutRef(
        namespace=str(meta.namespace),
        name=str(meta.name),
        uid=str(meta.uid),
        generation=int(meta.get("generation") or 0),
    )
    async with runtime.lock(ref.key):
        try:
            decision = await reconcile(
                runtime, ref, body.spec, body.get("status"), dict(meta.annotations)
            )
        except ApiException as error:
            raise kopf.TemporaryError(
                f"API server said {error.status} {error.reason}", delay=RETRY_DELAY_SECONDS
            ) from error
    emit_events(body, decision, logger)


def emit_events(body: kopf.Body, decision: Decision, logger: kopf.Logger) -> None:
    """One Kubernetes Event (and log line) per transition the domain reported."""
    for event in decision.events:
        kopf.event(body, type=event.type.value, reason=event.reason, message=event.message)
        logger.info("%s: %s", event.reason, event.message)


async def rollout_changed(body: kopf.Body, memo: kopf.Memo, logger: kopf.Logger, **_: Any) -> None:
    """A rollout was created or edited (spec or annotations), or the operator restarted."""
    await reconcile_body(body, memo, logger)


async def rollout_tick(body: kopf.Body, memo: kopf.Memo, logger: kopf.Logger, **_: Any) -> None:
    """Periodic reconcile: advances the analysis clock and repairs drifted children."""
    await reconcile_body(body, memo, logger)


async def rollout_deleted(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """Forget the rollout; owner references delete its children and load pods."""
    runtime = runtime_of(memo)
    runtime.forget(str(body.metadata.namespace), str(body.metadata.name))


def mirrors_a_route(spec: kopf.Spec, **_: Any) -> bool:
    """Whether the rollout uses Mirror traffic (it then holds a finalizer)."""
    traffic = spec.get("analysis", {}).get("traffic", {})
    return bool(traffic.get("source") == TrafficSourceType.MIRROR.value)


async def rollout_unmirrored(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """Remove the rollout's RequestMirror filters from every route of its namespace."""
    namespace, name = str(body.metadata.namespace), str(body.metadata.name)
    runtime = runtime_of(memo)
    try:
        routes = await observe_routes(runtime, namespace)
        await steer_mirrors(runtime, namespace, name, None, None, routes)
    except ApiException as error:
        raise kopf.TemporaryError(
            f"API server said {error.status} {error.reason}", delay=RETRY_DELAY_SECONDS
        ) from error


def register_rollout_handlers(registry: kopf.OperatorRegistry, settings: OperatorSettings) -> None:
    """Register the rollout handlers into `registry` with the configured timer interval."""
    for decorator in (kopf.on.create, kopf.on.update, kopf.on.resume):
        decorator(*RESOURCE, registry=registry, id=f"{decorator.__name__}-reconcile")(
            rollout_changed
        )
    kopf.timer(
        *RESOURCE,
        registry=registry,
        interval=settings.reconcile_interval_seconds,
        initial_delay=1.0,
        id="tick",
    )(rollout_tick)
    # optional: a failing cleanup never holds a deletion up. (Every rollout carries kopf's
    # finalizer anyway: kopf adds it for the timer, to stop the timer before the object goes.)
    kopf.on.delete(*RESOURCE, registry=registry, optional=True, id="cleanup")(rollout_deleted)
    # Mirror rollouts edit a route they do not own: not optional, so the finalizer stays
    # until the filters are gone.
    kopf.on.delete(*RESOURCE, registry=registry, when=mirrors_a_route, id="unmirror")(
        rollout_unmirrored
    )
