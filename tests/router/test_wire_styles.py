"""The generated `wire` module against the OpenAPI specification's "Style Examples" table (OAS 3.1.1, parameter
`color`; label arrays and objects as RFC 6570 expands them), cell by cell."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.wire import generated_router, wire_document

STRING, ARRAY, OBJECT = "blue", ["blue", "black", "brown"], {"R": 100, "G": 200, "B": 150}
PATH_TABLE = [
    ("matrix", False, ";color=blue", ";color=blue,black,brown", ";color=R,100,G,200,B,150"),
    ("matrix", True, ";color=blue", ";color=blue;color=black;color=brown", ";R=100;G=200;B=150"),
    ("label", False, ".blue", ".blue,black,brown", ".R,100,G,200,B,150"),
    ("label", True, ".blue", ".blue.black.brown", ".R=100.G=200.B=150"),
    ("simple", False, "blue", "blue,black,brown", "R,100,G,200,B,150"),
    ("simple", True, "blue", "blue,black,brown", "R=100,G=200,B=150"),
]
QUERY_TABLE = [
    ("form", False, "color=blue", "color=blue,black,brown", "color=R,100,G,200,B,150"),
    ("form", True, "color=blue", "color=blue&color=black&color=brown", "R=100&G=200&B=150"),
    ("spaceDelimited", False, None, "color=blue%20black%20brown", "color=R%20100%20G%20200%20B%20150"),
    ("pipeDelimited", False, None, "color=blue|black|brown", "color=R|100|G|200|B|150"),
    ("deepObject", True, None, None, "color[R]=100&color[G]=200&color[B]=150"),
]


def request_module() -> Any:
    """The request module (`wire`); the fixture gives the parameter styles (`wire_styles`)."""
    return importlib.import_module("toolc_router.wire")


@pytest.fixture(scope="module")
def wire(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with generated_router(tmp_path_factory.mktemp("styles"), wire_document("http://h:1", "http://h:2")):
        yield importlib.import_module("toolc_router.wire_styles"), importlib.import_module("toolc_router._types")


@pytest.mark.parametrize(("style", "explode", "string", "array", "obj"), PATH_TABLE)
def test_path_styles(wire: Any, style: str, explode: bool, string: str, array: str, obj: str) -> None:
    module, types = wire
    arg = types.HttpArg("color", "color", "path", required=True, style=style, explode=explode)
    assert [module.path_value(arg, value) for value in (STRING, ARRAY, OBJECT)] == [string, array, obj]


@pytest.mark.parametrize(("style", "explode", "string", "array", "obj"), QUERY_TABLE)
def test_query_styles(wire: Any, style: str, explode: bool, string: str | None, array: str | None,
                      obj: str) -> None:
    module, types = wire
    arg = types.HttpArg("color", "color", "query", style=style, explode=explode)
    for value, expected in ((STRING, string), (ARRAY, array), (OBJECT, obj)):
        if expected is not None:
            assert "&".join(f"{k}={v}" for k, v, _ in module.form_pairs(arg, value)) == expected


def test_header_and_cookie_styles(wire: Any) -> None:
    module, types = wire
    for explode, obj in ((False, "R,100,G,200,B,150"), (True, "R=100,G=200,B=150")):
        arg = types.HttpArg("X-Color", "X-Color", "header", style="simple", explode=explode)
        assert [module.header_value(arg, v) for v in (STRING, ARRAY, OBJECT)] == ["blue", "blue,black,brown", obj]
    cookie = types.HttpArg("color", "color", "cookie", style="form", explode=False)
    assert module.cookie_pairs(cookie, ARRAY) == [("color", "blue,black,brown", True)]
    assert module.cookie_pairs(cookie, "a b;c") == [("color", "a%20b%3Bc", True)]


def test_content_parameters_and_reserved_characters(wire: Any) -> None:
    module, types = wire
    content = types.HttpArg("where", "where", "query", content_type="application/json")
    assert module.form_pairs(content, {"a": [1, "x y"]}) == [("where", "%7B%22a%22%3A%5B1%2C%22x%20y%22%5D%7D", True)]
    reserved = types.HttpArg("next", "next", "query", style="form", explode=True, allow_reserved=True)
    assert module.form_pairs(reserved, "/a?b=c&d#e+f") == [("next", "/a?b%3Dc%26d%23e%2Bf", True)]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), object()])
def test_values_the_rules_cannot_encode_are_refused(wire: Any, value: Any) -> None:
    module, types = wire
    arg = types.HttpArg("n", "n", "query", style="form", explode=True)
    with pytest.raises(types.RouterError):
        module.form_pairs(arg, value)



def _spec(types: Any, *arguments: Any, **fields: Any) -> Any:
    security = ((types.AuthScheme("key", "apiKey", location="query", param_name="api_key"),),)
    return types.HttpSpec("POST", "/things/{id}", tuple(arguments), security=security, **fields)


@pytest.mark.parametrize(("arguments", "words"), [
    ({"id": 1, "ghost": 1}, "unknown argument"),
    ({"id": 1, "tenant": "evil"}, "set by a preset"),
    ({"id": 1, "filter": {"api_key": "x"}}, "belongs to a credential"),
    ({"id": 1, "filter": {"tenant": "x"}}, "belongs to the preset"),
    ({"id": 1, "note": "n"}, "required when the body is sent"),
    ({"id": "..", "label": "l"}, "dot segment"),
    ({"id": {"a": 1}}, "schema says integer"),
])
def test_the_serializer_fails_closed_on_its_own(wire: Any, arguments: dict[str, Any], words: str) -> None:
    """Defence in depth: whatever validation ran before, `build_request` refuses what it can't send by the rules."""
    _, types = wire
    spec = _spec(types,
                 types.HttpArg("id", "id", "path", required=True, style="simple", explode=False, kind="integer"),
                 types.HttpArg("tenant", "tenant", "query", style="form", explode=True, kind="string"),
                 types.HttpArg("filter", "filter", "query", style="form", explode=True, kind="object"),
                 types.HttpArg("label", "label", "body", required_in_body=True, kind="string"),
                 types.HttpArg("note", "note", "body", kind="string"),
                 body_content_type="application/json")
    with pytest.raises(types.RouterError, match=words):
        request_module().build_request(spec, "http://h", arguments, {"query": {"tenant": "acme"}}, {"key": "SECRET"})


def test_the_serializer_sends_presets_and_credentials_once(wire: Any) -> None:
    _, types = wire
    spec = _spec(types, types.HttpArg("id", "id", "path", required=True, style="simple", explode=False),
                 types.HttpArg("filter", "filter", "query", style="form", explode=True, kind="object"),
                 types.HttpArg("label", "label", "body", required_in_body=True, kind="string"),
                 body_content_type="application/json")
    request = request_module().build_request(spec, "http://h/", {"id": 7, "filter": {"size": "a&b"}, "label": "x"},
                                   {"query": {"tenant": "acme"}, "header": {"X-Org": "o"}}, {"key": "S&1"})
    assert request.url == "http://h/things/7?size=a%26b&tenant=acme&api_key=S%261"
    assert request.headers == {"X-Org": "o"} and request.content == b'{"label":"x"}'
