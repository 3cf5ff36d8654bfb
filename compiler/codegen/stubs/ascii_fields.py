"""Non-ASCII field names of a generated models module made ASCII (`models.ascii_fields` decides when), with
libcst, which keeps the rest of the source exactly as written."""

from __future__ import annotations

import libcst

from compiler.codegen.stubs.identifiers import snake_name


def ascii_field_names(code: str) -> str:
    return libcst.parse_module(code).visit(_AsciiFields()).code


class _AsciiFields(libcst.CSTTransformer):
    """Python folds identifiers with NFKC, so a field spelt in full-width letters (U+FF46 U+FF52 ...) is really
    called `from` and would never receive its own wire key. Every non-ASCII field name becomes an ASCII one with the original as alias."""

    def leave_ClassDef(self, original: libcst.ClassDef, updated: libcst.ClassDef) -> libcst.ClassDef:
        taken: set[str] = set()
        for line in updated.body.body:
            if isinstance(line, libcst.SimpleStatementLine):
                taken.update(s.target.value for s in line.body
                             if isinstance(s, libcst.AnnAssign) and isinstance(s.target, libcst.Name))
        if not isinstance(updated.body, libcst.IndentedBlock):
            return updated
        body = [self._line(line, taken) for line in updated.body.body]
        return updated.with_changes(body=updated.body.with_changes(body=body))

    def _line(self, line: libcst.BaseStatement, taken: set[str]) -> libcst.BaseStatement:
        if not isinstance(line, libcst.SimpleStatementLine):
            return line
        return line.with_changes(body=[self._field(s, taken) for s in line.body])

    @staticmethod
    def _field(small: libcst.BaseSmallStatement, taken: set[str]) -> libcst.BaseSmallStatement:
        if not (isinstance(small, libcst.AnnAssign) and isinstance(small.target, libcst.Name)
                and not small.target.value.isascii()):
            return small
        raw = small.target.value
        name = snake_name(raw, fallback="field", prefix="field")
        while name in taken:
            name += "_"
        taken.add(name)
        tight = libcst.AssignEqual(whitespace_before=libcst.SimpleWhitespace(""),
                                   whitespace_after=libcst.SimpleWhitespace(""))
        alias = libcst.Arg(keyword=libcst.Name("alias"), value=libcst.SimpleString(repr(raw)), equal=tight)
        value = small.value
        if isinstance(value, libcst.Call) and isinstance(value.func, libcst.Name) and value.func.value == "Field":
            new_value = value.with_changes(args=[*value.args, alias])
        else:
            default = value if value is not None else libcst.Ellipsis()
            new_value = libcst.Call(func=libcst.Name("Field"), args=[libcst.Arg(default), alias])
        return small.with_changes(target=libcst.Name(name), value=new_value,
                                  equal=libcst.AssignEqual() if small.equal is libcst.MaybeSentinel.DEFAULT else small.equal)
