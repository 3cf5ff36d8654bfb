"""The project file's `gateway:` limits → what the generated router's `_tables.py` bakes: `RATE_LIMITS`
(`RateLimitSpec` rows), `RESULT_BUDGETS` (`BudgetSpec` rows) and `RETRIES` (`RetrySpec` rows). Every value is validated when the project file is
loaded (`compiler.config.GatewayConfig`), so nothing here can fail."""

from __future__ import annotations

from typing import Any

from compiler.config import PERIODS, RateLimitsConfig, ResultBudgetConfig, RetriesConfig


def rate_limit_rows(limits: RateLimitsConfig) -> list[dict[str, Any]]:
    rows = []
    for rule in limits.rules:
        burst = rule.burst or rule.calls
        rows.append({
            "tools": rule.tools,
            "source": rule.source,
            "caller": rule.caller,
            "rate": rule.calls / PERIODS[rule.per],
            "burst": burst,
            "per_caller": rule.per_caller,
            "fleet": rule.fleet,
            "label": f"{rule.calls} per {rule.per}" + (f" (bursts of {burst})" if burst != rule.calls else ""),
        })
    return rows


def budget_rows(budget: ResultBudgetConfig) -> list[dict[str, Any]]:
    return [
        {"tools": rule.tools, "source": rule.source, "caller": rule.caller,
         **({"limit": rule.bytes, "unit": "bytes"} if rule.bytes is not None else {"limit": rule.tokens, "unit": "tokens"})}
        for rule in budget.rules
    ]


def retry_rows(retries: RetriesConfig) -> list[dict[str, Any]]:
    return [{"tools": rule.tools, "source": rule.source, "caller": rule.caller, "max_retries": rule.max_retries,
             "max_wait_s": rule.max_wait_s} for rule in retries.rules]
