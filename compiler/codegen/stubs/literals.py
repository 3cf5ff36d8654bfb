"""String literals and the safety gate for generated Python.

Nothing from an input is pasted into code as raw text. Text becomes code only through

- `string_literal(text)`: `repr`, which always yields a single-line, fully escaped literal;
- `docstring_literal(text)`: a triple-quoted literal that evaluates back to exactly `text` (checked), with
  backslashes doubled (so `\\N{...}`, `\\x` and a trailing backslash stay text), every `\"\"\"` run broken up,
  a final quote escaped, and control, format and separator characters (bidi overrides, NUL, U+2028, `\\r`)
  written as escapes;
- identifiers from `codegen.stubs.identifiers`.

`check_module(code)` is the gate every generated module passes before it is emitted: it must parse and
compile with CPython (only `ast`: libcst took seconds on a big models module; `codegen.stubs.keep` parses tools.py
with libcst itself when it carries kept functions over), and its top level may hold only a docstring, imports,
function and class definitions, and assignments whose value contains no call, so importing it runs nothing
from the input.
"""

from __future__ import annotations

import ast

from compiler.infra.collector import collector_paused

_ESCAPES = {"\\": "\\\\", "\r": "\\r", "\t": "\\t", "\0": "\\x00"}


def string_literal(text: str) -> str:
    return repr(text)


def _escape_char(char: str) -> str:
    if char in _ESCAPES:
        return _ESCAPES[char]
    if char == "\n" or char.isprintable():
        return char
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _normalise(text: str) -> str:
    """Trailing whitespace and surrounding blank lines are presentation, not content: they go."""
    return "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").split("\n")).strip("\n")


def docstring_body(text: str) -> str:
    """The source text between the triple quotes of a docstring for `text` (already normalised)."""
    plain = "\\" not in text and text.replace("\n", "").isprintable()  # the usual case: nothing to escape
    body = text if plain else "".join(_escape_char(char) for char in text)
    body = body.replace('"""', '\\"\\"\\"')
    if body.endswith('"') and not _escaped_at_end(body):
        body = body[:-1] + '\\"'  # a bare quote before the closing `"""` would end the literal early
    return body


def _escaped_at_end(body: str) -> bool:
    """Whether the last character is escaped: an odd run of backslashes before it. One backslash escapes the
    quote; two are an escaped backslash, and the quote after them is bare."""
    run = len(body) - 1 - len(body[:-1].rstrip("\\"))
    return run % 2 == 1


def docstring_literal(text: str, indent: str = "") -> str:
    """A triple-quoted literal for `text`; multi-line text is indented by `indent`, closing quotes on their own
    line. The literal is evaluated back and compared with the (normalised) text before it is returned."""
    text = _normalise(text)
    lines = docstring_body(text).split("\n")
    if len(lines) == 1:
        literal = f'"""{lines[0]}"""'
    else:
        rest = [f"{indent}{line}" if line else "" for line in lines[1:]]
        literal = '"""' + "\n".join([lines[0], *rest]) + f'\n{indent}"""'
    value = ast.literal_eval(literal)
    first, *others = value.split("\n")  # the first line follows the quotes; only the others were indented
    back = "\n".join([first, *(line.removeprefix(indent) for line in others)]).removesuffix("\n")
    if back != text:
        raise ValueError("docstring does not round-trip")  # a bug in this module, never the input's fault
    return literal


class UnsafeModule(ValueError):
    """A generated module that does not parse, or whose top level would run something on import."""


def _literal_only(node: ast.AST) -> bool:
    return not any(isinstance(sub, ast.Call | ast.Await | ast.Lambda | ast.NamedExpr) for sub in ast.walk(node))


def _allowed_top_level(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.Import | ast.ImportFrom):
        return True
    if isinstance(statement, ast.If):
        return _type_checking_block(statement)
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
        return _allowed_function(statement)
    if isinstance(statement, ast.Expr):
        return isinstance(statement.value, ast.Constant) and isinstance(statement.value.value, str)
    if isinstance(statement, ast.Assign | ast.AnnAssign):
        return statement.value is None or _literal_only(statement.value)
    return isinstance(statement, ast.ClassDef) and _allowed_class(statement)


_CLASS_CALLS = frozenset({"Field", "ConfigDict"})
"""Calls a class body may make at import time (pydantic field and model configuration, literal arguments)."""


def _type_checking_block(node: ast.If) -> bool:
    """`if TYPE_CHECKING:` holding only imports (never true at run time)."""
    return (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING" and not node.orelse
            and all(isinstance(s, ast.Import | ast.ImportFrom) for s in node.body))


def _allowed_function(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Defining a function evaluates its decorators and defaults (annotations are lazy: every generated module
    starts with `from __future__ import annotations`): none may call anything."""
    defaults = [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
    return not node.decorator_list and all(_literal_only(d) for d in defaults)


def _allowed_class(node: ast.ClassDef) -> bool:
    if node.decorator_list or node.keywords or not all(_literal_only(base) for base in node.bases):
        return False
    for statement in node.body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef) and _allowed_function(statement):
            continue
        if isinstance(statement, ast.Pass) or (
            isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
        ):
            continue
        if not isinstance(statement, ast.Assign | ast.AnnAssign):
            return False
        if statement.value is not None and not _class_value_ok(statement.value):
            return False
    return True


def _class_value_ok(value: ast.expr) -> bool:
    for sub in ast.walk(value):
        if isinstance(sub, ast.Await | ast.Lambda | ast.NamedExpr):
            return False
        if isinstance(sub, ast.Call) and not (isinstance(sub.func, ast.Name) and sub.func.id in _CLASS_CALLS):
            return False
    return True


def check_module(code: str, *, filename: str, allow_calls: frozenset[str] = frozenset()) -> ast.Module:
    """Raise UnsafeModule unless `code` parses and compiles and only defines things at top level; returns its
    `ast` tree (callers read the module back from it rather than parsing it again).

    Class bodies may only assign, with no call other than `Field(...)`/`ConfigDict(...)` (datamodel-code-generator's
    pydantic models), and have no decorators or metaclass keywords.

    `allow_calls` names module-level call statements that are known to be safe (pydantic's `X.model_rebuild()`
    that datamodel-code-generator emits for recursive models): `<Name>.<method>()` with no arguments only.
    """
    if "from __future__ import annotations" not in code:
        raise UnsafeModule(f"{filename}: annotations must be lazy (`from __future__ import annotations`)")
    with collector_paused():  # an `ast` tree and a code object hold no reference cycle: nothing to collect
        tree = _parsed(code, filename)
        for statement in tree.body:
            if _allowed_top_level(statement) or _allowed_call(statement, allow_calls):
                continue
            raise UnsafeModule(f"{filename}:{statement.lineno}: top-level {type(statement).__name__} is not allowed")
    return tree


def parse_module(code: str, *, filename: str) -> ast.Module:
    """`code`'s tree, for a module that is only read, never emitted as it is: it is rewritten first, and the
    rewritten module passes `check_module` (a leaf chunk of models, `model_chunks._swap_stand_ins`). Parsing is
    the part of the check such a reading needs; compiling and inspecting it would be done again on the rewrite.
    Raises UnsafeModule when it does not parse."""
    with collector_paused():  # as in check_module: a tree holds no reference cycle
        try:
            return ast.parse(code, filename=filename)
        except (SyntaxError, ValueError) as exc:
            raise UnsafeModule(f"{filename} does not parse: {exc}") from exc


def _parsed(code: str, filename: str) -> ast.Module:
    """The module's tree, once it also compiles (the compiler finds errors the parser does not)."""
    tree = parse_module(code, filename=filename)
    try:
        compile(tree, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        raise UnsafeModule(f"{filename} does not parse: {exc}") from exc
    return tree


def _allowed_call(statement: ast.stmt, allow_calls: frozenset[str]) -> bool:
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
        return False
    call = statement.value
    return (
        not call.args
        and not call.keywords
        and isinstance(call.func, ast.Attribute)
        and call.func.attr in allow_calls
        and isinstance(call.func.value, ast.Name)
    )
