"""Progress of a long compile, on stderr: which stage is running and how many of the compile's steps are done
(read the sources, the catalog, each target, code generation, the lock, writing). Shown only on a terminal and
not under `--quiet`; otherwise every call is a no-op, so a pipe or a log never gets control characters.

Stages report through `Build.progress` (or the `Progress` the pipeline was given); lowering runs in worker
processes, so a target counts as one step, done when its worker hands its result back.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

import click

if TYPE_CHECKING:
    from click._termui_impl import ProgressBar


class Progress:
    """A no-op: what a compile reports to when nobody is watching (tests, pipes, `--quiet`)."""

    def begin(self, total: int, label: str) -> None:
        """`total` steps are coming; `label` is the first stage."""

    def stage(self, label: str) -> None:
        """`label` is the stage running now."""

    def step(self, label: str | None = None) -> None:
        """One step done (and, given a `label`, the stage running now)."""

    def end(self) -> None:
        """The compile is over (also on failure)."""


class TerminalProgress(Progress):
    """click's progress bar; its label is the running stage."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._bar: ProgressBar[int] | None = None

    def begin(self, total: int, label: str) -> None:
        self._bar = click.progressbar(length=total, label=_label(label), file=self._stream, show_eta=False,
                                      show_percent=False, show_pos=True, width=24)
        self._bar.__enter__()
        self._bar.render_progress()

    def stage(self, label: str) -> None:
        if self._bar is not None:
            self._bar.label = _label(label)
            self._bar.render_progress()

    def step(self, label: str | None = None) -> None:
        if self._bar is not None:
            if label:
                self._bar.label = _label(label)
            self._bar.update(1)

    def end(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None


def _label(stage: str) -> str:
    return f"toolc: {stage[:48]:48}"  # a fixed width, so the bar does not jump as stages change


def for_terminal(*, quiet: bool, stream: TextIO | None = None) -> Progress:
    """A progress display on `stream` (stderr) when it is a terminal and not `quiet`, else the no-op."""
    stream = stream if stream is not None else sys.stderr
    if quiet or not stream.isatty():
        return Progress()
    return TerminalProgress(stream)
