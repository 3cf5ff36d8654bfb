"""The OpenAPI source: OpenAPI 3.0 / 3.1 (and 3.2) and Swagger 2.0 documents → IR.

Modules: `reader` (the entry point), `operations` (operations → tools, naming, output schema), `parameters`
(parameters and bodies → one flat input schema and the wire binding), `schema_dialect` (OpenAPI schemas → JSON
Schema 2020-12, shared definitions, `$ref` rewriting), `document` (version, servers, security), `codes`.
"""

from __future__ import annotations

from compiler.sources.openapi.reader import read_openapi

__all__ = ["read_openapi"]
