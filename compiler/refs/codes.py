"""Diagnostic codes of `$ref` resolution (TC201-TC249).

| code  | severity | meaning                                                                                      |
|-------|----------|----------------------------------------------------------------------------------------------|
| TC201 | error    | network (http/https) or other non-file URL `$ref`: refused, never fetched                    |
| TC202 | error    | `$ref` to a file outside the root folder, or to an absolute path / `file:` URL outside it      |
| TC203 | error    | the `$ref`'s pointer or anchor names nothing (also: not a JSON pointer)                      |
| TC204 | error    | the referenced file is missing or unreadable (or is a file ref where no files are read)       |
| TC205 | warning  | `inline`: a recursive reference was unrolled to max_depth, then pruned to type + description  |
| TC206 | error    | a `$ref` loop with no content (A → B → A): no schema to validate against                      |
| TC207 | warning  | `inline`: the node budget ran out (exponential fan-out); the rest is pruned                   |
| TC208 | error    | nesting deeper than the resolver walks (MAX_NESTING levels); the subtree is replaced by `{}`  |
| TC209 | warning  | unsupported reference feature (`$dynamicRef`, `$recursiveRef`): kept as written               |
| TC210 | error    | `load_document`: the document is not a JSON object, so external files cannot be attached      |

While `load_document` pulls files in, TC201-TC204 are warnings: the `$ref` becomes a `refusal`, and the source's
reader decides per tool what it costs (`sources/lost_refs.py`). Every diagnostic carries `source` and `tool` as the
caller passed them and `pointer`: the JSON pointer of the
offending `$ref` (ending in `/$ref`) in the schema or file that holds it.
"""

from __future__ import annotations

NETWORK_REF = "TC201"
OUTSIDE_ROOT = "TC202"
BAD_POINTER = "TC203"
MISSING_FILE = "TC204"
RECURSION_PRUNED = "TC205"
EMPTY_LOOP = "TC206"
BUDGET_EXCEEDED = "TC207"
TOO_DEEP = "TC208"
UNSUPPORTED = "TC209"
NOT_AN_OBJECT = "TC210"

MAX_NESTING = 100
"""How many schema levels `bundle` / `inline` / `load_document` walk (Python recursion stays well below the
interpreter's limit; a deeper schema is a TC208 diagnostic, never a RecursionError). A schema level is up to two
JSON levels (`properties` → name → schema), so a walked result stays below MAX_OUTPUT_DEPTH."""

MAX_OUTPUT_DEPTH = 230
"""JSON levels an `inline` result may have (memoised definitions are reused at any depth, so the walk alone
does not bound it). orjson, which writes every output file, refuses more than 254, and the providers' passes
recurse once per level; a deeper result is TC208 and replaced by `{}`."""
