"""Stand-in for `shapes.py`, which codegen copies into every router from `compiler/providers/shapes.py` (the one
implementation the compiler runs too): mypy checks the static modules against that file. Never copied."""

from compiler.providers.shapes import Shape as Shape
from compiler.providers.shapes import TooDeep as TooDeep
from compiler.providers.shapes import loads as loads
from compiler.providers.shapes import rewrite as rewrite
