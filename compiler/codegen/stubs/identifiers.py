"""Python identifiers from hostile text: tool names, property names and source ids become names that cannot
hijack the generated code.

The rules, applied in order (every step is deterministic):

1. NFKC normalisation, so look-alikes such as full-width `class` (U+FF43 U+FF4C ...) or the `ﬁ` ligature become plain ASCII.
2. ASCII folding: a character that is still not ASCII loses its accents (NFKD minus combining marks, `é` → `e`);
   if nothing ASCII is left it becomes a hex escape (CYRILLIC SMALL LETTER A → `u0430`), so `class`
   spelt with a Cyrillic es can never pass for `class`.
3. Word splitting on anything that is not a letter or digit and on camelCase boundaries, then joining as
   `snake_case` (functions, parameters, packages) or `PascalCase` (classes). Leading and trailing underscores
   disappear with the separators, so dunders (`__import__`) cannot be produced.
4. Empty results get a fallback word; a leading digit gets a prefix (`1st` → `p_1st`).
5. Keywords, soft keywords, builtins and names the caller reserves get a trailing underscore (`class` →
   `class_`, `self` → `self_`).
6. A name longer than `limits.max_identifier_length` (default 80) is cut and ends in `_` + the first 8 hex
   digits of the SHA-256 of its raw text, before any code generator sees it (a property name thousands of
   characters long would otherwise be carried through every stage, and formatted, at full length).
7. `unique_names` resolves names that sanitise alike: a raw name that is already its own sanitised form (or is
   it minus the keyword underscore: `class` for `class_`) keeps it; every other one gets `_` + the first 8 hex digits of the SHA-256 of its raw text. The suffix depends only
   on the name itself, so adding a tool never renames another tool's collision-suffixed function.
"""

from __future__ import annotations

import builtins
import hashlib
import keyword
import re
import unicodedata
from collections.abc import Callable, Iterable
from functools import lru_cache

from compiler.infra import limits

PYTHON_RESERVED: frozenset[str] = frozenset(
    {*keyword.kwlist, *keyword.softkwlist, "type", *dir(builtins), "self", "cls"}
)
"""Names no generated function, parameter or package may take verbatim."""

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z][a-z0-9]*|[0-9][a-z0-9]*")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def fold_ascii(text: str) -> str:
    """NFKC, then accents dropped, then every remaining non-ASCII character as `u<hex>` between separators."""
    if text.isascii():  # NFKC leaves ASCII as it is, and nothing is left to fold
        return text
    out: list[str] = []
    for char in unicodedata.normalize("NFKC", text):
        if char.isascii():
            out.append(char)
            continue
        stripped = "".join(c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c))
        if stripped and stripped.isascii() and stripped.isalnum():
            out.append(stripped)
        else:
            out.append(f" u{ord(char):04x} ")
    return "".join(out)


def words(text: str) -> list[str]:
    """`getHTTPResponse-v2beta` → ['get', 'HTTP', 'Response', 'v2beta']; `1st` → ['1st']."""
    if len(text) > _REMEMBERED_LENGTH:  # a hostile name megabytes long is split once, never kept
        return _WORD.findall(fold_ascii(text))
    return list(_split_words(text))


_REMEMBERED_LENGTH = 256


@lru_cache(maxsize=65536)
def _split_words(text: str) -> tuple[str, ...]:
    """Remembered: a big API names the same parameters in every tool (Microsoft Graph: 122,779 splits of a few
    thousand distinct names, a second of CPU in every compile that makes its stubs)."""
    return tuple(_WORD.findall(fold_ascii(text)))


def capped(name: str, raw: str, limit: int | None = None) -> str:
    """`name` cut to the identifier length limit, with a hash of `raw` so cut names stay distinct."""
    cap = limits.current().max_identifier_length if limit is None else limit
    if len(name) <= cap:
        return name
    return f"{name[:cap - 9].rstrip('_')}_{name_hash(raw)}"


def is_safe_identifier(name: str) -> bool:
    """A plain ASCII identifier that is neither a keyword nor a dunder."""
    return bool(_IDENTIFIER.match(name)) and not keyword.iskeyword(name) and not name.startswith("__")


def snake_name(raw: str, *, fallback: str, prefix: str, reserved: Iterable[str] = ()) -> str:
    """A lower-case snake_case identifier; `prefix` goes before a leading digit."""
    name = "_".join(word.lower() for word in words(raw)) or fallback
    if name[0].isdigit():
        name = f"{prefix}_{name}"
    name = capped(name, raw)
    if name in PYTHON_RESERVED or name in set(reserved):
        name += "_"
    return name


def pascal_name(raw: str, *, fallback: str, prefix: str = "T") -> str:
    """A PascalCase identifier; digits after digits are kept apart (`a_1` → `A_1`) so distinct inputs stay distinct."""
    parts: list[str] = []
    for word in words(raw):
        piece = word[:1].upper() + word[1:]
        if parts and piece[0].isdigit() and parts[-1][-1].isdigit():
            piece = "_" + piece
        parts.append(piece)
    name = "".join(parts) or fallback
    if name[0].isdigit():
        name = prefix + name
    name = capped(name, raw)
    if name in PYTHON_RESERVED:
        name += "_"
    return name


def name_hash(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def unique_names(raws: Iterable[str], sanitise: Callable[[str], str], *, taken: Iterable[str] = ()) -> dict[str, str]:
    """Map each distinct raw name to a unique identifier (see rule 6 in the module docstring)."""
    distinct = sorted(set(raws))
    groups: dict[str, list[str]] = {}
    for raw in distinct:
        groups.setdefault(sanitise(raw), []).append(raw)
    used = set(taken)
    result: dict[str, str] = {}
    # Plain names first, so a hash-suffixed name can never take a name another raw name owns outright.
    for base, members in sorted(groups.items()):
        if base in used:
            continue
        owner = members[0] if len(members) == 1 else next((m for m in members if base in (m, m + "_")), None)
        if owner is not None:
            result[owner] = base
            used.add(base)
    for base, members in sorted(groups.items()):
        for raw in members:
            if raw in result:
                continue
            candidate = f"{base.rstrip('_')}_{name_hash(raw)}"
            counter = 2
            while candidate in used:
                candidate = f"{base.rstrip('_')}_{name_hash(raw)}_{counter}"
                counter += 1
            result[raw] = candidate
            used.add(candidate)
    return result
