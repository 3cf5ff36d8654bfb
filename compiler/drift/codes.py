"""Diagnostic codes of the drift stage (TC701-TC749)."""

from __future__ import annotations

NO_LOCK = "TC701"
"""The output folder has no toolc.lock: it was never compiled, or by a toolc without locks."""
BAD_LOCK = "TC702"
"""toolc.lock is not a lock this toolc can read."""
NO_CATALOG = "TC703"
"""The output folder has no readable catalog.json: changed tools are listed but cannot be classified."""
COMPILE_FAILED = "TC704"
"""The in-memory compile failed, so there is nothing to compare."""
KIND_MISMATCH = "TC705"
"""`toolc diff` was given an OpenAPI document and an MCP listing."""
FILE_DRIFT = "TC710"
"""A generated file differs from the output folder."""
TOOL_DRIFT = "TC711"
"""A tool changed at or above --fail-on."""
