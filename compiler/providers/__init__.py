"""Provider lowering: IR tools → OpenAI (Chat Completions, Responses), Claude and Gemini tool definitions.

    registry.py  PROVIDERS: target name (`compiler/targets.py`) → dialect; every per-target list derives from it
    dialect.py   the `Dialect` base class (flags, name rules, passes, budgets, the template `lower()`)
    openai.py · anthropic.py · gemini.py   one `Dialect` subclass each
    lower.py     per target: names → per-tool lowering (strict, else loose) → validation → request limits
    base.py      the one walker, `Capabilities` flags, loss reporting;  passes.py / hoist.py: shared passes
    validate.py  generic validation rules; each dialect composes its own (every emitted definition passes it)
    names.py     manglers, server prefix, namesake strategy;  namemap.py: the reverse map + `arguments_to_wire`
    schemas.py   `emit_providers` → {target: TargetOutput} (schemas/<target>.json, .names.json, report sizes)
    transforms.py  reversible strict transforms (maps → {key, value} entries, free-form → JSON strings)
    descriptions.py · examples.py   boundary cuts; Claude `input_examples` from valid document examples
    tokens.py · spans.py   token counts (o200k_base offline); where each definition sits in a tools array
    (the fit stage, `emit_fit`, is `compiler/fit/`: toolsets, discovery and deferred forms, budgets)
    codes.py     TC401-TC449, TC770-TC779 and their severities  (`toolc explain` is `compiler/commands/explain.py`)
"""

from compiler.providers.namemap import UnknownToolName, arguments_to_wire

__all__ = ["UnknownToolName", "arguments_to_wire"]
