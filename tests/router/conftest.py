"""Fixtures of the router tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers.raw_http import RawRecorder, raw_http_server


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[RawRecorder, RawRecorder]]:
    """Two loopback servers that record raw requests, one pair per module: where the document's servers point, and
    somewhere else (a request that reaches the second was steered)."""
    with raw_http_server() as primary, raw_http_server() as secondary:
        yield primary, secondary
