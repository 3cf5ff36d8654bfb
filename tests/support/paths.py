"""Where things are, for every test and helper: the one place a path is computed from `__file__`."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
SERVERS = ROOT / "tests" / "servers"
