"""Stand-in for `ranking.py`, which codegen copies into every router from `compiler/providers/ranking.py` (the one
implementation `toolc list --search` runs too): mypy checks the static modules against that file. Never copied."""

from compiler.providers.ranking import SearchEntry as SearchEntry
from compiler.providers.ranking import SearchIndex as SearchIndex
