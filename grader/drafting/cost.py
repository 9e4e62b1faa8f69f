"""Token usage and cost of model calls, and the per-draft budget.

Prices come from litellm's (offline) cost table; models it does not know can be priced through
settings (`input_cost_per_mtok`, `output_cost_per_mtok`, USD per million tokens). A call whose cost
is unknown is counted, so a report can say the total is a lower bound.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grader.drafting._litellm import load_litellm
from grader.errors import GraderError


class BudgetExceeded(GraderError):
    """The per-draft budget is spent; further model calls are refused."""


def usage_of(response: Any) -> dict[str, int]:
    usage = getattr(response, "usage", None)
    if usage is None:
        return {}
    get = usage.get if isinstance(usage, dict) else (lambda k, d=0: getattr(usage, k, d))
    return {k: int(get(k, 0) or 0) for k in ("prompt_tokens", "completion_tokens", "total_tokens")}


def call_cost(model: str, usage: dict[str, int], settings: Any = None) -> float | None:
    """USD for one call, or None when no price is known for `model`."""
    prompt, completion = usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)
    in_price = getattr(settings, "input_cost_per_mtok", None)
    out_price = getattr(settings, "output_cost_per_mtok", None)
    if in_price is not None or out_price is not None:
        return (prompt * (in_price or 0.0) + completion * (out_price or 0.0)) / 1e6
    try:
        p, c = load_litellm().cost_per_token(model=model, prompt_tokens=prompt, completion_tokens=completion)
    except Exception:  # model not in litellm's table
        return None
    return float(p) + float(c)


@dataclass
class Ledger:
    """Usage and spend of one draft; `check()` before each call enforces the budget."""

    budget_usd: float | None = None
    spent_usd: float = 0.0
    totals: dict[str, float] = field(default_factory=lambda: {
        "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0,
        "calls": 0, "failed_calls": 0, "cached_samples": 0, "cost_unknown_calls": 0,
    })

    def check(self) -> None:
        if self.budget_usd is not None and self.spent_usd >= self.budget_usd:
            raise BudgetExceeded(f"per-draft budget of ${self.budget_usd:.4f} spent (${self.spent_usd:.4f})")

    def add(self, usage: dict[str, int], cost: float | None) -> None:
        self.totals["calls"] += 1
        for key, value in usage.items():
            self.totals[key] = self.totals.get(key, 0) + value
        if cost is None:
            self.totals["cost_unknown_calls"] += 1
        else:
            self.spent_usd += cost

    def failed(self) -> None:
        self.totals["calls"] += 1
        self.totals["failed_calls"] += 1
