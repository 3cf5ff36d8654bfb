"""Discovery mode: three meta-tools through which a model reaches every tool of a catalog too big to send.

    toolc_search_tools   {query, limit?}       → matching tools: id, name, one-line description, toolsets
    toolc_describe_tool  {tool}                → the tool's full description and input schema (its own shape)
    toolc_call_tool      {tool, arguments?}    → calls the tool by id, with arguments in the schema `describe` gave

The generated router serves them from its baked catalog (`python/toolc_router/discovery.py`); they are lowered
for each target like any tool, so every file passes that target's validator. `arguments` is any JSON object:
OpenAI strict sends it as a JSON-encoded string (TC423), which the router decodes.
"""

from __future__ import annotations

from compiler.ir import JsonObject, McpBinding, Tool

SERVER = "toolc"
SEARCH, DESCRIBE, CALL = "toolc_search_tools", "toolc_describe_tool", "toolc_call_tool"

_SCHEMAS: dict[str, tuple[str, JsonObject]] = {
    SEARCH: ("Search this API's tool catalog. Returns up to `limit` tools (id, name, summary, toolsets) whose id, "
             "name or description contain every word of the query. Then describe a tool before calling it.",
             {"type": "object", "properties": {
                 "query": {"type": "string", "description": "Words to look for, e.g. 'create issue'."},
                 "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "At most this many (20)."}},
              "required": ["query"]}),
    DESCRIBE: ("Describe one tool by the id search returned: its full description and the JSON Schema of its "
               "arguments.",
               {"type": "object", "properties": {"tool": {"type": "string", "description": "A tool id."}},
                "required": ["tool"]}),
    CALL: ("Call one tool by id with arguments that follow the schema describe returned.",
           {"type": "object", "properties": {
               "tool": {"type": "string", "description": "A tool id."},
               "arguments": {"type": "object", "description": "The tool's arguments."}},
            "required": ["tool"]}),
}


def meta_tools() -> list[Tool]:
    """The meta-tools as catalog tools (lowered per target by the same code as every tool)."""
    return [Tool(id=f"mcp:{SERVER}:{name}", source=SERVER, name=name, description=description,
                 input_schema=schema, binding=McpBinding(server=SERVER, tool_name=name))
            for name, (description, schema) in _SCHEMAS.items()]
