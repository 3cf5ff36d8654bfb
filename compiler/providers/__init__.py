"""Provider lowering: IR tools → OpenAI (Chat Completions, Responses), Claude and Gemini tool definitions.

    lower.py     per target: names → per-tool lowering (strict, else loose) → validation → request limits
    base.py      the one walker, `Capabilities` flags, loss reporting;  passes.py / hoist.py: shared passes
    openai.py · anthropic.py · gemini.py   one dialect each: capabilities + an ordered tuple of node passes
    validate.py  one rule-based validator per provider (every emitted definition passes it)
    names.py     manglers, server prefix, namesake strategy;  namemap.py: the reverse map + `arguments_to_wire`
    emit.py      `emit_providers` (schemas/<target>.json, schemas/<target>.names.json, artifacts, report sizes)
    explain.py   `toolc explain`;  codes.py: TC401-TC449 and their severities
"""

from compiler.providers.namemap import UnknownToolName, arguments_to_wire

__all__ = ["UnknownToolName", "arguments_to_wire"]
