"""The state one compile carries from stage to stage: the catalog, the diagnostics and the files being made."""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from compiler.config import Config
from compiler.diagnostics import Diagnostics
from compiler.ir import Catalog

if TYPE_CHECKING:
    from compiler.refs import RefResolver


@dataclass
class Build:
    config: Config
    catalog: Catalog
    resolver: RefResolver
    diagnostics: Diagnostics
    targets: tuple[str, ...]
    files: dict[str, bytes] = field(default_factory=dict)
    """Output files, by path relative to the output folder (POSIX separators)."""
    artifacts: dict[str, Any] = field(default_factory=dict)
    """Structured results later stages read (e.g. `providers`: lowered tools and name maps per target)."""
    previous_output: MutableMapping[str, bytes] = field(default_factory=dict)
    """The output folder as it was before this compile (codegen carries `# toolc: keep` edits over from it)."""

    def add_file(self, path: str, content: bytes) -> None:
        if path in self.files:
            raise ValueError(f"two stages write {path}")
        self.files[path] = content


Emitter = Callable[[Build], None]
