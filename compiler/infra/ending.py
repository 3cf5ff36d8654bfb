"""What a command hands over to be freed only by the end of its process: the `toolc` script ends some commands
without the interpreter's teardown (`cli.ENDS_WITHOUT_TEARDOWN`), and a compile's build, dropped as the command
returns, was freed object by object on the way there (Microsoft Graph: 0.2-0.35 s between the output written and
the process ending). Elsewhere (click's test runner, a command that ends as usual) nothing is held."""

from __future__ import annotations

_held: list[object] = []
_ends_at_once = False


def ends_at_once() -> None:
    """Called by the `toolc` script once it knows its process will end without teardown."""
    global _ends_at_once
    _ends_at_once = True


def hold(value: object) -> None:
    """Keep `value` alive until the process ends, when it ends at once (freeing it first would be wasted)."""
    if _ends_at_once:
        _held.append(value)
