"""Plans and results: what every method returns, exact or heuristic.

A :class:`Plan` places executors on (node, slot); a slot is a worker port of a node, and a
worker is a (node, slot) used by one topology. ``parallelism`` is set when the method chose
the executor (thread, instance) counts; ``input_rate`` when the problem is ``throughput``
(the rate the method claims its plan sustains).
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Status(str, Enum):
    OPTIMAL = "optimal"  # proven optimal
    FEASIBLE = "feasible"  # a plan that passes the evaluator; optimality not proven
    INFEASIBLE = "infeasible"  # no plan exists (exact) or the method found none (heuristic); see message
    UNKNOWN = "unknown"  # stopped (time, size) with no plan and no proof
    ERROR = "error"  # the method failed; see message


class Placement(BaseModel):
    model_config = ConfigDict(extra="forbid")
    topology: str
    component: str
    executor: int = Field(ge=0, description="executor index within its component")
    node: str
    slot: int = Field(description="worker port on the node")


class Plan(BaseModel):
    model_config = ConfigDict(extra="forbid")
    placements: list[Placement] = Field(default_factory=list)
    parallelism: dict[str, dict[str, int]] | None = Field(
        default=None, description="{topology: {component: count}} when the method chose the counts"
    )
    input_rate: float | None = Field(default=None, description="claimed sustainable input rate (throughput)")

    def counts(self, topology: str) -> dict[str, int] | None:
        if self.parallelism is None:
            return None
        return self.parallelism.get(topology)

    @classmethod
    def from_assignment(cls, assignment: dict[tuple[str, str, int], tuple[str, int]], **kw: Any) -> "Plan":
        """Build from {(topology, component, index): (node, slot)}."""
        pl = [
            Placement(topology=t, component=c, executor=i, node=n, slot=s)
            for (t, c, i), (n, s) in sorted(assignment.items())
        ]
        return cls(placements=pl, **kw)

    def assignment(self) -> dict[tuple[str, str, int], tuple[str, int]]:
        return {(p.topology, p.component, p.executor): (p.node, p.slot) for p in self.placements}


class Result(BaseModel):
    """What :func:`planner.solve` returns. ``gap`` = |objective - bound| / max(|objective|, 1e-9)."""

    model_config = ConfigDict(extra="forbid")
    problem: str
    method: str
    status: Status
    objective: float | None = None
    bound: float | None = None
    gap: float | None = None
    seconds: float = 0.0
    plan: Plan | None = None
    metrics: dict[str, Any] | None = None
    message: str = ""
    details: dict[str, Any] = Field(default_factory=dict, description="method-specific extras (trace, evicted, ...)")

    @property
    def ok(self) -> bool:
        return self.status in (Status.OPTIMAL, Status.FEASIBLE)


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    if objective is None or bound is None:
        return None
    return abs(objective - bound) / max(abs(objective), 1e-9)


def gap_to_optimal(value: float | None, optimum: float | None) -> float | None:
    """|value - optimum| / |optimum| (absolute difference when the optimum is 0)."""
    if value is None or optimum is None:
        return None
    d = abs(value - optimum)
    return d / abs(optimum) if abs(optimum) > 1e-12 else d
