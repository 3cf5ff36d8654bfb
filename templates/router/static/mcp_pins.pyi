"""Stand-in for `mcp_pins.py`, which codegen copies into every router from `compiler/sources/mcp_pins.py` (the one
implementation the compiler and `toolc check --live` run too): mypy checks the static modules against that file.
Never copied."""

from compiler.sources.mcp_pins import changes as changes
from compiler.sources.mcp_pins import refusal_reason as refusal_reason
from compiler.sources.mcp_pins import with_placeholders as with_placeholders
