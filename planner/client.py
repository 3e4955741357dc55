"""A Python client for ``planner serve``.

>>> from planner.client import PlannerClient
>>> with PlannerClient("http://127.0.0.1:8080") as c:          # doctest: +SKIP
...     res = c.solve("tiny-linear.json", "network", "exact.bruteforce", time_limit=5)
...     res.status, res.objective
(<Status.OPTIMAL: 'optimal'>, 1.2)

Non-finite numbers travel as the strings "inf", "-inf", "nan" (JSON has no such numbers);
:meth:`PlannerClient.solve` turns them back into floats in the Result's own numeric fields.

Every error reply of the server raises :class:`PlannerServiceError` carrying its
``{error, detail, path}``; a server that cannot be reached raises it too, with
``error="unreachable"`` and ``status=None``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from .model import Instance
from .plan import Plan, Result

__all__ = ["PlannerClient", "PlannerServiceError"]


class PlannerServiceError(RuntimeError):
    """An error reply (or no reply) from the planner service.

    ``status`` is the HTTP status (None when the server was not reached); ``error``,
    ``detail`` and ``path`` are the server's error body; ``body`` is all of it.
    """

    def __init__(self, status: int | None, error: str, detail: str, path: str = "$", body: dict[str, Any] | None = None):
        self.status = status
        self.error = error
        self.detail = detail
        self.path = path
        self.body = body or {"error": error, "detail": detail, "path": path}
        where = f" at {path}" if path and path != "$" else ""
        super().__init__(f"{status or 'no reply'} {error}{where}: {detail}")


def _instance_json(instance: Instance | dict | str | Path) -> dict[str, Any]:
    """An instance as a JSON object: an Instance, a dict, or a path to a JSON file."""
    if isinstance(instance, Instance):
        return instance.model_dump(mode="json", exclude_defaults=True)
    if isinstance(instance, dict):
        return instance
    p = Path(instance)
    if not p.exists():
        from .instances import shipped_path

        p = shipped_path(str(instance)) or p
    return json.loads(p.read_text())


def _plan_json(plan: Plan | Result | dict) -> dict[str, Any]:
    if isinstance(plan, (Plan, Result)):
        if isinstance(plan, Result):
            if plan.plan is None:
                raise ValueError("this Result holds no plan")
            plan = plan.plan
        return plan.model_dump(mode="json")
    return plan


class PlannerClient:
    """Talk to a planner service at ``base_url`` (e.g. ``http://127.0.0.1:8080``).

    ``timeout`` (seconds) bounds each HTTP request; solves get ``time_limit`` more on top,
    so a long solve is not cut off by the client before the server's deadline.
    """

    def __init__(self, base_url: str, timeout: float = 30.0, *, transport: httpx.BaseTransport | None = None):
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout, transport=transport)

    def __enter__(self) -> "PlannerClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # --- the endpoints -----------------------------------------------------------------
    def solve(self, instance: Instance | dict | str | Path, problem: str, method: str, time_limit: float | None = None,
              seed: int = 0, **options: Any) -> Result:
        """POST /v1/solve; the server's Result (its plan already judged by the evaluator)."""
        body = {"instance": _instance_json(instance), "problem": problem, "method": method,
                "time_limit": time_limit, "seed": seed, "options": options}
        extra = time_limit if time_limit is not None else 0.0
        data = self._request("POST", "/v1/solve", body, timeout=self.timeout + extra)
        return Result.model_validate(_restore_floats(data))

    def evaluate(self, instance: Instance | dict | str | Path, plan: Plan | Result | dict,
                 problem: str | None = None) -> dict[str, Any]:
        """POST /v1/evaluate; the violations and metrics of ``plan``."""
        body = {"instance": _instance_json(instance), "plan": _plan_json(plan), "problem": problem}
        return self._request("POST", "/v1/evaluate", body)

    def methods(self) -> list[dict[str, Any]]:
        """GET /v1/methods; each method's name, problems, kind, options and source."""
        return self._request("GET", "/v1/methods")

    def storm_schedule(self, topology: dict[str, Any], supervisors: dict[str, Any] | list, **fields: Any) -> dict[str, Any]:
        """POST /v1/storm/schedule with Storm UI REST JSON; {result, assignment}."""
        return self._request("POST", "/v1/storm/schedule", {"topology": topology, "supervisors": supervisors, **fields})

    def health(self) -> dict[str, Any]:
        """GET /healthz."""
        return self._request("GET", "/healthz")

    # --- plumbing ----------------------------------------------------------------------
    def _request(self, verb: str, path: str, body: Any = None, timeout: float | None = None) -> Any:
        try:
            if body is None:
                r = self._http.request(verb, path, timeout=timeout or self.timeout)
            else:
                content = json.dumps(body, allow_nan=False).encode()
                r = self._http.request(verb, path, content=content, headers={"content-type": "application/json"},
                                       timeout=timeout or self.timeout)
        except httpx.TimeoutException as e:
            raise PlannerServiceError(None, "timeout", f"{verb} {self.base_url}{path}: no reply in time ({e})") from e
        except httpx.TransportError as e:
            raise PlannerServiceError(None, "unreachable", f"{verb} {self.base_url}{path}: {e}") from e
        try:
            data = r.json()
        except ValueError:
            data = None
        if r.status_code >= 400:
            if isinstance(data, dict) and "error" in data:
                raise PlannerServiceError(r.status_code, str(data["error"]), str(data.get("detail", "")),
                                          str(data.get("path", "$")), data)
            raise PlannerServiceError(r.status_code, "http_error", r.text[:500])
        if data is None:
            raise PlannerServiceError(r.status_code, "bad_reply", f"the reply is not JSON: {r.text[:200]!r}")
        return data


_NONFINITE = {"inf": float("inf"), "-inf": float("-inf"), "nan": float("nan")}


def _restore_floats(data: Any) -> Any:
    """Undo the server's encoding of non-finite floats ("inf", "-inf", "nan") in a Result's
    numeric fields. Metrics are left as sent: a string there may be a node named "inf"."""
    if not isinstance(data, dict):
        return data
    out = dict(data)
    for key in ("objective", "bound", "gap", "seconds"):
        if isinstance(out.get(key), str) and out[key] in _NONFINITE:
            out[key] = _NONFINITE[out[key]]
    plan = out.get("plan")
    if isinstance(plan, dict) and isinstance(plan.get("input_rate"), str) and plan["input_rate"] in _NONFINITE:
        out["plan"] = {**plan, "input_rate": _NONFINITE[plan["input_rate"]]}
    return out
