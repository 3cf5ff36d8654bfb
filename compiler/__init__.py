"""toolc: compile MCP tool listings and OpenAPI documents into provider tool schemas, typed stubs and a router."""

__version__ = "0.1.0"
