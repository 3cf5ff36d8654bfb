"""Checking emitted JSON against a provider SDK's request types (TypedDicts), and a loopback stand-in for the
providers' HTTP APIs that records what the SDK sends."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

from pydantic import TypeAdapter
from typing_extensions import get_type_hints

from tests.support.loopback import QuietHandler, loopback_http


def conforms(value: Any, typed_dict: Any) -> None:
    """`value` is accepted by the SDK's TypedDict: pydantic validates the required keys and the value types, and no
    key is one the type does not declare (pydantic would ignore those)."""
    TypeAdapter(typed_dict).validate_python(value)
    declared = set(get_type_hints(typed_dict))
    unknown = set(value) - declared
    assert not unknown, f"{typed_dict.__name__}: keys the SDK does not declare: {sorted(unknown)}"


class ProviderApi(QuietHandler):
    """Answers `POST .../responses` and `POST .../messages` with the canned body set in `answers` (by the path's
    last segment) and records every request body in `requests`."""

    requests: ClassVar[list[tuple[str, Any]]] = []
    answers: ClassVar[dict[str, Any]] = {}

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        ProviderApi.requests.append((self.path, json.loads(self.rfile.read(length))))
        self.send_json(200, json.dumps(ProviderApi.answers[self.path.rstrip("/").rsplit("/", 1)[-1]]).encode())


@contextmanager
def provider_api(answers: dict[str, Any]) -> Iterator[str]:
    ProviderApi.requests, ProviderApi.answers = [], answers
    with loopback_http(ProviderApi) as url:
        yield url
