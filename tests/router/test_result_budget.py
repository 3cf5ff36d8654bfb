"""Result budgets (`gateway.result_budget`, templates/router/static/result_budget.py): a 2 MB answer from a loopback
API reaches the model cut to the budget (bytes, or o200k tokens) with a marker that says how much was left out and
which arguments ask for less; the structured answer stays valid JSON of the same shape and agrees with the text;
the cut is audited. Plus the JSON cutter on its own, on generated values."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bpe_openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.config import Config, GatewayConfig, OpenApiConfig, ResultBudgetConfig
from compiler.infra.diagnostics import Diagnostics
from compiler.infra.loading import load_document
from compiler.ir import Catalog
from compiler.sources.openapi import read_openapi
from tests.support.loopback import KeepAliveHandler, loopback_http
from tests.support.paths import FIXTURES
from tests.support.router import load_router, make_build, write_router

USERS = OpenApiConfig(id="users", path="fixtures/guard/users.yaml", base_url="${USERS_URL}")
PEOPLE = [{"id": i, "name": f"user {i}", "bio": "x" * 300} for i in range(6000)]
ANSWER = json.dumps({"total": len(PEOPLE), "users": PEOPLE, "next": "cursor-2"}).encode()
TEXT = ("line of plain text ünïcode\n" * 80_000).encode()
O200K = bpe_openai.get_encoding("o200k_base")


class Big(KeepAliveHandler):
    def do_GET(self) -> None:
        if "page_size=7" in self.path:  # the caller's key, echoed over and over (a server that leaks it)
            self.send_json(200, json.dumps(" ".join([self.headers["X-Api-Key"]] * 20_000)).encode())
            return
        if "since=" in self.path:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(TEXT)))
            self.end_headers()
            self.wfile.write(TEXT)
            return
        self.send_json(200, ANSWER)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source, tools = read_openapi(load_document(FIXTURES / "guard" / "users.yaml"), source_id="users",
                                 location="users", diagnostics=Diagnostics(), config=USERS)
    build = make_build(Catalog(sources=(source,), tools=tuple(tools)), openapi=[USERS])
    budget = ResultBudgetConfig.model_validate({"rules": [{"tools": "listUsers", "bytes": 65536}]})
    build.config = Config(root=build.config.root, openapi=(USERS,), gateway=GatewayConfig(result_budget=budget))
    return write_router(build, tmp_path_factory.mktemp("gen"))


@pytest.fixture
def rt(generated: Path) -> Iterator[Any]:
    with load_router(generated) as module:
        yield module


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with loopback_http(Big) as base:
        yield base


def context(rt: Any, actor: str | None = None) -> Any:
    return rt.InvocationContext(mode="execution", project_id="p", spec_frozen=True, spec_hash="h", actor=actor)


async def call(rt: Any, url: str, arguments: dict[str, Any], actor: str | None = None,
               **router: Any) -> tuple[Any, Any]:
    made = rt.Router(audit_sink=rt.MemoryAuditSink(), environ={"USERS_URL": url, "TOOLC_USERS_KEY": "k"}, **router)
    result = await made.call_tool("openapi:users:listUsers", arguments, context=context(rt, actor))
    await made.aclose()
    end = [event for event in made.audit.events if event.event_type == "tool_invocation_end"]
    return result, end[0].payload


def texts(result: Any) -> list[str]:
    return [block["text"] for block in result.content if block.get("type") == "text"]


async def test_a_two_megabyte_answer_reaches_the_model_cut_to_the_budget_with_the_marker(rt: Any, url: str) -> None:
    assert len(ANSWER) > 2_000_000
    result, end = await call(rt, url, {"page_size": 500})
    assert not result.is_error
    *data, marker = texts(result)
    assert sum(len(text.encode()) for text in texts(result)) <= 65536
    # The structured answer: valid JSON of the same shape, the small members whole, the list's first items.
    assert result.structured["total"] == 6000 and result.structured["next"] == "cursor-2"
    kept = result.structured["users"]
    assert 100 < len(kept) < 6000 and kept == PEOPLE[: len(kept)]
    assert data == [json.dumps(result.structured, ensure_ascii=False, separators=(",", ":"))]  # the text agrees
    assert marker.startswith(f"[cut by toolc: this result was {len(ANSWER):,} bytes, over the 65,536-byte budget "
                             f"for the model; left out: {6000 - len(kept):,} of 6,000 items at $.users. ")
    assert marker.endswith("To see the rest, call again with page_size, since set to ask for less or the next part.]")
    assert end["cut"] == {"unit": "bytes", "budget": 65536, "was": len(ANSWER),
                          "now": sum(len(text.encode()) for text in texts(result))}


async def test_plain_text_is_cut_at_a_character_boundary(rt: Any, url: str) -> None:
    result, end = await call(rt, url, {"since": "2026-01-01T00:00:00Z"})
    text, marker = texts(result)
    assert TEXT.decode().startswith(text) and len(text.encode()) <= 65536 - 480
    assert "characters at text" in marker
    assert end["cut"]["was"] == len(TEXT)


async def test_a_secret_the_answer_echoes_is_redacted_before_the_cut_never_half_shown(rt: Any, url: str) -> None:
    key = "k-Secret-Key-0123456789"
    made = rt.Router(audit_sink=rt.MemoryAuditSink(), environ={"USERS_URL": url, "TOOLC_USERS_KEY": key})
    result = await made.call_tool("openapi:users:listUsers", {"page_size": 7}, context=context(rt))
    await made.aclose()
    shown = json.dumps([result.structured, result.content])
    assert "k-Sec" not in shown and "[cut by toolc:" in shown


async def test_a_token_budget_counts_o200k_tokens(rt: Any, url: str) -> None:
    budget = rt._types.BudgetSpec(tools="openapi:users:*", limit=4000, unit="tokens")
    result, end = await call(rt, url, {"page_size": 500}, result_budgets=(budget,))
    counted = len(O200K.encode_ordinary("\n".join(texts(result))))
    assert counted <= 4000 and counted > 3000  # close to the budget, not far under it
    assert end["cut"] == {"unit": "tokens", "budget": 4000, "was": end["cut"]["was"], "now": counted}
    assert texts(result)[-1].startswith(f"[cut by toolc: this result was {end['cut']['was']:,} tokens, over the "
                                        "4,000-token budget")


async def test_a_result_within_its_budget_or_without_one_is_untouched(rt: Any, url: str) -> None:
    loose = rt._types.BudgetSpec(tools="*", limit=10_000_000, unit="bytes")
    other = rt._types.BudgetSpec(tools="deleteUser", limit=2048, unit="bytes")
    for budgets in ((loose,), (other,)):
        result, end = await call(rt, url, {"page_size": 500}, result_budgets=budgets)
        assert result.structured["users"] == PEOPLE and "cut" not in end


async def test_a_rule_may_name_the_source_and_the_caller(rt: Any, url: str) -> None:
    assert (rt._types.BudgetSpec(tools="listUsers", limit=65536, unit="bytes"),) == rt.router.RESULT_BUDGETS
    rules = (rt._types.BudgetSpec(tools="*", source="other", limit=2048),
             rt._types.BudgetSpec(tools="*", source="users", caller="agent-*", limit=4096),
             rt._types.BudgetSpec(tools="*", caller="ann", limit=8192))
    for actor, budget in (("agent-7", 4096), ("ann", 8192), ("bob", None)):
        _result, end = await call(rt, url, {"page_size": 500}, actor, result_budgets=rules)
        assert (end["cut"]["budget"] if "cut" in end else None) == budget, actor


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=40),
                    lambda inner: st.lists(inner, max_size=8) | st.dictionaries(st.text(max_size=8), inner, max_size=8),
                    max_leaves=60)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=JSON, room=st.integers(min_value=0, max_value=400))
def test_cut_json_is_valid_json_within_the_room_and_a_prefix_of_the_value(rt: Any, value: Any, room: int) -> None:
    cut = rt.result_budget.cut_json(value, room, "$", rt.result_budget.Omissions())
    size = len(json.dumps(cut, ensure_ascii=False, separators=(",", ":")).encode())
    if len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()) <= room:
        assert cut == value
    else:
        assert size <= max(room, 4), (cut, room)  # `null` when not even the value's brackets fit
        assert is_part_of(cut, value)


def is_part_of(cut: Any, value: Any) -> bool:
    """Every array of `cut` a prefix of its original (its last item possibly cut), every object a subset, every
    string a prefix."""
    if cut is None or cut == value:
        return True
    if isinstance(value, str):
        return isinstance(cut, str) and value.startswith(cut)
    if isinstance(value, list):
        return cut == [] or (isinstance(cut, list) and len(cut) <= len(value) and cut[:-1] == value[: len(cut) - 1]
                and (not cut or is_part_of(cut[-1], value[len(cut) - 1])))
    if isinstance(value, dict):
        return isinstance(cut, dict) and all(key in value and is_part_of(item, value[key]) for key, item in cut.items())
    return False


def test_a_token_budget_without_bpe_openai_stops_the_router_at_start_saying_what_to_install(
        rt: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    real = rt.result_budget.importlib.import_module

    def without_bpe(name: str) -> Any:
        if name == "bpe_openai":
            raise ImportError(name)
        return real(name)

    monkeypatch.setattr(rt.result_budget.importlib, "import_module", without_bpe)
    with pytest.raises(RuntimeError, match=r"^a token result budget needs bpe-openai: pip install 'bpe-openai>=0.1.4,<0.2'$"):
        rt.Router(audit_sink=rt.MemoryAuditSink(), environ={},
                  result_budgets=(rt._types.BudgetSpec(limit=4000, unit="tokens"),))
    rt.Router(audit_sink=rt.MemoryAuditSink(), environ={},
              result_budgets=(rt._types.BudgetSpec(limit=4000, unit="bytes"),))  # bytes need nothing more
