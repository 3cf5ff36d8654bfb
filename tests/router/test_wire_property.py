"""Property: for any argument dict (keys of the tool, keys outside its schema, values of any JSON shape, strings full of
`/ ? # & ; = % . \\r \\n`), the generated router either refuses the call before sending anything, or the raw request
that reaches the loopback server has exactly the path segments, query keys, headers and cookie names its binding
allows, with every credential and every preset present exactly once, with its own value."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from compiler.config import OpenApiConfig
from tests.servers.raw_http import RawRecorder, RawRequest
from tests.support.wire import API_KEY, CREDENTIALS, SESSION, call_once, generated_router, wire_document

PRESETS = {"listItems": {"query": {"tenant": "acme"}, "header": {"X-Org": "acme-org"}, "cookie": {"theme": "dark"}},
           "createCharge": {"currency": "eur"}}
STANDARD_HEADERS = {"host", "accept", "accept-encoding", "connection", "user-agent", "content-length",
                    "content-type", "cookie"}
HOSTILE = st.text(alphabet=st.sampled_from(list("/?#&;=%.\r\n ab[]\"',\\é")), max_size=12)
KEYS = st.one_of(st.sampled_from(["tenant", "q", "filter", "deep", "ids", "point", "where", "pref", "X-Note", "X-Dims",
                                  "X-Org", "api_key", "sid", "theme", "name", "amount", "metadata", "items",
                                  "currency", "extra"]), HOSTILE)
VALUES = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-5, 5), HOSTILE),
                      lambda inner: st.one_of(st.lists(inner, max_size=3),
                                              st.dictionaries(KEYS, inner, max_size=3)), max_leaves=6)
RANDOM = st.dictionaries(KEYS, VALUES, max_size=5)
EXTRA = st.one_of(st.just({}), st.dictionaries(KEYS, VALUES, max_size=1))


def _typed(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Arguments of the schema's own names and shapes (hostile strings), sometimes with one more key."""
    return st.builds(lambda given, extra: {**extra, **given}, st.fixed_dictionaries({}, optional=fields), EXTRA)


LIST_ITEMS = _typed(q=HOSTILE, pref=HOSTILE, **{"X-Note": HOSTILE}, filter=st.dictionaries(KEYS, HOSTILE, max_size=3),
                    deep=st.fixed_dictionaries({}, optional={"color": HOSTILE, "tags": st.lists(HOSTILE, max_size=3)}),
                    ids=st.lists(st.integers(-3, 3), max_size=3),
                    point=st.fixed_dictionaries({"x": st.integers(0, 3), "y": st.integers(0, 3)}))
CHARGE = _typed(metadata=st.dictionaries(HOSTILE, HOSTILE, max_size=2), expand=st.lists(HOSTILE, max_size=2),
                items=st.lists(st.fixed_dictionaries({}, optional={"price": HOSTILE, "quantity": st.integers(0, 3)}),
                               max_size=2),
                extra=st.dictionaries(KEYS, HOSTILE, max_size=2))


@pytest.fixture(scope="module")
def setup(servers: tuple[RawRecorder, RawRecorder],
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, RawRecorder]]:
    primary, secondary = servers
    document = wire_document(primary.url, secondary.url)
    config = OpenApiConfig(id="wire", path="wire.yaml", fixed_params=PRESETS)
    with generated_router(tmp_path_factory.mktemp("prop"), document, config=config) as rt:
        yield rt, primary


def _call(rt: Any, operation: str, arguments: dict[str, Any]) -> Any:
    return call_once(rt, f"openapi:wire:{operation}", arguments, CREDENTIALS)


def _common(request: RawRequest, allowed_headers: set[str], allowed_cookies: set[str]) -> None:
    assert [value for key, value in request.query_pairs if unquote(key) == "api_key"] == [API_KEY]
    cookies = request.cookies
    assert [value for name, value in cookies if name == "sid"] == [SESSION]
    assert {name for name, _ in cookies} <= allowed_cookies | {"sid"}
    assert set(request.header_names) <= STANDARD_HEADERS | allowed_headers
    assert len(request.headers("cookie")) <= 1
    assert all("\r" not in line.decode("latin-1") and "\n" not in line.decode("latin-1")
               for line in request.header_lines)


SETTINGS = settings(max_examples=120, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@SETTINGS
@given(arguments=st.one_of(LIST_ITEMS, LIST_ITEMS, LIST_ITEMS, RANDOM))
def test_list_items_sends_only_what_its_binding_allows(setup: tuple[Any, RawRecorder],
                                                       arguments: dict[str, Any]) -> None:
    rt, server = setup
    server.clear()
    result = _call(rt, "listItems", arguments)
    event("refused" if result.is_error else "sent")
    if result.is_error:
        assert server.requests == []
        return
    [request] = server.requests
    assert request.path_segments == ["", "root", "items"]
    filter_keys = set(arguments.get("filter") or {}) if isinstance(arguments.get("filter"), dict) else set()
    owned = {"tenant", "q", "ids", "point", "where", "api_key"}
    keys = request.query_keys
    for key in keys:
        assert key in owned or key.startswith("deep[") or (key in filter_keys and key not in owned | {"deep"})
    assert [value for key, value in request.query_pairs if key == "tenant"] == ["acme"]
    assert len([key for key in keys if key not in ("ids",)]) == len(set(keys) - {"ids"})  # nothing repeated
    _common(request, {"x-note", "x-dims", "x-org"}, {"pref", "theme"})
    assert request.headers("x-org") == ["acme-org"]
    assert [value for name, value in request.cookies if name == "theme"] == ["dark"]


@SETTINGS
@given(name=st.one_of(HOSTILE, HOSTILE, HOSTILE, VALUES), extra=EXTRA)
def test_get_file_stays_on_its_path(setup: tuple[Any, RawRecorder], name: Any, extra: dict[str, Any]) -> None:
    rt, server = setup
    server.clear()
    result = _call(rt, "getFile", {"name": name, **extra})
    event("refused" if result.is_error else "sent")
    if result.is_error:
        assert server.requests == []
        return
    assert not extra  # keys outside the schema are never sent
    [request] = server.requests
    segments = request.path_segments
    assert segments[:3] == ["", "root", "files"] and len(segments) == 4
    assert unquote(segments[3]) not in ("", ".", "..")
    assert request.query_keys == ["api_key"]
    _common(request, set(), set())


@SETTINGS
@given(arguments=st.one_of(CHARGE, CHARGE, CHARGE, RANDOM), amount=st.integers(0, 9))
def test_create_charge_form_body_keeps_its_preset(setup: tuple[Any, RawRecorder], arguments: dict[str, Any],
                                                  amount: int) -> None:
    rt, server = setup
    server.clear()
    result = _call(rt, "createCharge", {**arguments, "amount": amount})
    event("refused" if result.is_error else "sent")
    if result.is_error:
        assert server.requests == []
        return
    [request] = server.requests
    assert request.path_segments == ["", "root", "charges"]
    pairs = [(unquote(k), unquote(v)) for k, _, v in (p.partition("=") for p in request.body.decode().split("&"))]
    assert [value for key, value in pairs if key == "currency"] == ["eur"]
    fields = {"amount", "metadata", "items", "expand", "extra"}
    extra = set(arguments.get("extra") or {}) if isinstance(arguments.get("extra"), dict) else set()
    for key, _ in pairs:
        base = key.split("[", 1)[0]
        assert base in fields | {"currency"} or (key in extra and base not in fields | {"currency"})
    _common(request, set(), set())


def test_the_property_run_is_not_vacuous(setup: tuple[Any, RawRecorder]) -> None:
    """The strategies reach both outcomes: a hostile-but-valid call goes out, a smuggling one does not."""
    rt, server = setup
    server.clear()
    assert not _call(rt, "listItems", {"q": "&tenant=evil;#", "pref": "x; sid=1"}).is_error
    assert len(server.requests) == 1
    assert _call(rt, "listItems", {"filter": {"api_key": "x"}}).is_error and len(server.requests) == 1

