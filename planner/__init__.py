"""The planner: exact and heuristic placement of stream-processing topologies."""

from .api import compare, evaluate, load_instance, solve
from .model import Instance, InstanceError
from .plan import Placement, Plan, Result, Status

__version__ = "0.1.0"
__all__ = ["solve", "evaluate", "compare", "load_instance", "Instance", "InstanceError", "Plan", "Placement", "Result", "Status"]
