"""Ask load pods what they measured, and tell them where the engines are.

Small HTTP calls from the operator to its own load pods (never to an engine): one report
per pod per look, carrying whole time blocks of bounded sketches, so the operator holds no
samples between looks and a restarted operator simply asks again.
"""

from __future__ import annotations

import httpx

from specdecode.domain.load_report import LoadReport, ReportError, report_from_wire

REPORT_TIMEOUT_SECONDS = 5.0


class ReportUnavailable(Exception):
    """The pod did not answer (not up yet, restarting, gone): a missing shard."""


def _auth(token: str | None) -> dict[str, str]:
    """The header a load pod's control endpoints require (its rollout's token)."""
    return {"Authorization": f"Bearer {token}"} if token else {}


async def fetch_report(
    http: httpx.AsyncClient,
    base_url: str,
    since: float,
    token: str | None = None,
    side: str | None = None,
) -> LoadReport:
    """One pod's report of the blocks since `since` (`token`: the rollout's; `side`: which
    side's, for the Mirror splitter, which measures both).

    Raises ReportUnavailable when the pod cannot be reached or answers with an error
    status, and ReportError when it answers with something that is not a report (a
    broken instrument: the gate says Error, not "no data").
    """
    try:
        response = await http.get(
            f"{base_url}/v1/report",
            params={"since": f"{since:.3f}", **({"side": side} if side else {})},
            headers=_auth(token),
            timeout=REPORT_TIMEOUT_SECONDS,
        )
    except httpx.HTTPError as error:
        raise ReportUnavailable(f"{type(error).__name__}: {error}"[:200]) from error
    if response.status_code != httpx.codes.OK:
        raise ReportUnavailable(f"HTTP {response.status_code}")
    try:
        data = response.json()
    except ValueError as error:
        raise ReportError(f"load report is not JSON: {error}") from error
    if not isinstance(data, dict):
        raise ReportError("load report is not a JSON object")
    return report_from_wire(data)


async def push_endpoints(
    http: httpx.AsyncClient,
    base_url: str,
    urls: list[str],
    token: str | None = None,
    side: str | None = None,
) -> bool:
    """Tell a load pod the engine endpoints of its side (the splitter: of `side`); False
    if it did not take them."""
    try:
        response = await http.post(
            f"{base_url}/v1/endpoints",
            json={"urls": urls, **({"side": side} if side else {})},
            headers=_auth(token),
            timeout=REPORT_TIMEOUT_SECONDS,
        )
    except httpx.HTTPError:
        return False
    return response.status_code in (httpx.codes.OK, httpx.codes.NO_CONTENT)
