"""Measurement (not a test): how many tools go out OpenAI-strict over the corpus issue 13 judges by.

    .venv/bin/python bench/strict_coverage.py [--json]

The corpus: the seven recorded MCP listings in fixtures/mcp and the GitHub, Stripe and Kubernetes documents in
fixtures/corpus/openapi. Per source: tools, strict tools, strict tools whose definition passes toolc's OpenAI
validator, optional fields (a property not in the source's `required`) that stay nullable in the strict
definition, the reversible transforms used (TC422 maps, TC423 JSON-encoded values) and silent losses: tools whose
transforms were reported but whose name-map entry has no `entries`/`json` shape to undo them, or the reverse.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from compiler.config import Config  # noqa: E402
from compiler.infra.diagnostics import Diagnostics  # noqa: E402
from compiler.pipeline import adhoc_inputs, read_catalog  # noqa: E402
from compiler.providers.lower import lower_target  # noqa: E402
from compiler.providers.registry import PROVIDERS  # noqa: E402
from compiler.refs import RefResolver  # noqa: E402

CORPUS = [*sorted((ROOT / "fixtures/mcp").glob("*.json")),
          *(ROOT / "fixtures/corpus/openapi" / name for name in ("github.json", "stripe.json", "kubernetes.json"))]
TARGET = "openai-chat"


def _optional_nullable(parameters: dict[str, object], source: dict[str, object]) -> tuple[int, int]:
    """(optional top-level fields, of which nullable) of one strict definition."""
    properties = source.get("properties")
    if not isinstance(properties, dict):
        return 0, 0
    required = set(source.get("required") or [])  # type: ignore[arg-type]
    lowered = parameters.get("properties") or {}
    total = nullable = 0
    for key in properties:
        if key in required or key not in lowered:  # type: ignore[operator]
            continue
        total += 1
        text = json.dumps(lowered[key])  # type: ignore[index]
        nullable += '"null"' in text
    return total, nullable


def measure(path: Path) -> dict[str, object]:
    config = Config(root=ROOT)
    diagnostics = Diagnostics()
    resolver = RefResolver(diagnostics)
    catalog = read_catalog(config, adhoc_inputs([path], ROOT), resolver, diagnostics)
    result = lower_target(catalog, resolver, TARGET, config)
    dialect = PROVIDERS[TARGET]
    strict = [item for item in result.lowered if item.strict]
    valid = sum(1 for item in strict if not dialect.check(item.definition))
    optional = nullable = 0
    for item in strict:
        total, ok = _optional_nullable(item.parameters or {}, item.tool.input_schema)
        optional, nullable = optional + total, nullable + ok
    codes = Counter(d.code for d in result.diagnostics)
    # A silent loss: a reversible transform the name map cannot undo (or a restoring shape nobody reported).
    transformed = {d.tool for d in result.diagnostics if d.code in ("TC422", "TC423")}
    restoring = {entry["tool"] for entry in result.entries.values()
                 if '"entries"' in json.dumps(entry) or '"json": true' in json.dumps(entry)}
    silent = len(transformed ^ restoring)
    reasons = Counter(d.message.split("because ", 1)[-1].split(":", 1)[-1].strip()[:70]
                      for d in result.diagnostics if d.code == "TC407")
    return {"source": path.name, "tools": len(catalog.tools), "emitted": len(result.lowered), "strict": len(strict),
            "strict_valid": valid, "optional": optional, "optional_nullable": nullable,
            "maps": codes.get("TC422", 0), "json_encoded": codes.get("TC423", 0), "silent": silent,
            "not_strict_reasons": dict(reasons.most_common(6))}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = [measure(path) for path in CORPUS]
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    totals = Counter[str]()
    for row in rows:
        for key in ("tools", "emitted", "strict", "strict_valid", "optional", "optional_nullable", "silent"):
            totals[key] += int(row[key])  # type: ignore[call-overload]
        print(f"{row['source']:32} tools {row['tools']:5}  strict {row['strict']:5}  valid {row['strict_valid']:5}  "
              f"optional nullable {row['optional_nullable']}/{row['optional']}  maps {row['maps']}  "
              f"json {row['json_encoded']}  silent {row['silent']}")
        for reason, count in row["not_strict_reasons"].items():  # type: ignore[attr-defined]
            print(f"    {count:5}  {reason}")
    share = 100 * totals["strict"] / max(totals["tools"], 1)
    print(f"TOTAL tools {totals['tools']} emitted {totals['emitted']} strict {totals['strict']} ({share:.1f} %) "
          f"valid {totals['strict_valid']} optional nullable {totals['optional_nullable']}/{totals['optional']} "
          f"silent losses {totals['silent']}")


if __name__ == "__main__":
    main()
