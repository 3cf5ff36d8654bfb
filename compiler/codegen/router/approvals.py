"""`gateway.approvals` → the `APPROVALS` the generated router's `_tables.py` bakes (`ApprovalSpec`)."""

from __future__ import annotations

from typing import Any

from compiler.config import ApprovalsConfig
from compiler.ir import RiskLevel


def approvals_table(approvals: ApprovalsConfig) -> dict[str, Any]:
    """The baked `ApprovalSpec` (`templates/router/static/_types.py`); validated when the file is loaded."""
    return {
        "min_risk": None if approvals.min_risk is None else RiskLevel.from_label(approvals.min_risk).value,
        "tools": tuple(approvals.tools),
        "timeout_s": approvals.timeout_s,
    }
