"""The fit stage: every target's output cut to what one request may carry (toolsets, the discovery
form, the provider's deferred form), token counts and budgets. Input: the providers stage's `TargetOutput`s;
output: `{target: FitOutput}` and the files under `schemas/toolsets/`, `schemas/discovery.*`, `schemas/*.deferred.json`.

    forms.py       `emit_fit`: planning, writing and budget checks; schemas/toolsets/index.json
    toolsets.py    toolsets (by MCP server, OpenAPI tag or path segment, or the project's globs)
    discovery.py   the three discovery meta-tools;  deferred.py: the providers' own deferred forms
    namespaces.py  OpenAI Responses namespaces;  guide.py: schemas/README.md
"""
