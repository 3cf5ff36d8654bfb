"""The project file: `toolc.yaml` (or a seed-style `mcp_servers.yaml`) → a validated `Config`.

Paths in the file are relative to the file's folder; `Config.root` is that folder. Unknown keys are refused,
so a typo is a diagnostic rather than a setting silently ignored. `${ENV}` references are left as written
here and expanded only where a value is used (so secrets never reach recordings or generated code).
"""

from __future__ import annotations

import re
import shlex
import types
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from compiler.infra.detect import detect_kind
from compiler.infra.diagnostics import CompilerError, Diagnostic, Severity
from compiler.infra.limits import Limits
from compiler.infra.loading import load_document
from compiler.infra.suggest import did_you_mean, nearest
from compiler.server_shapes import ShapeError, normalize_server_shapes
from compiler.targets import ALIASES, TARGETS

INVALID_CONFIG = "TC110"
DUPLICATE_SOURCE = "TC106"
UNKNOWN_TARGET = "TC107"
PROJECT_FILE_ERRORS = frozenset({INVALID_CONFIG, DUPLICATE_SOURCE, UNKNOWN_TARGET})
"""Errors that mean the project file or the command line is wrong, not an input: exit 2, not 1."""

DEFAULT_CONFIG_NAME = "toolc.yaml"
ALL_TARGETS = TARGETS
"""Every compile target, in the registry's order (`compiler.targets`)."""
RISK_LABELS = ("low", "medium", "high", "critical")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolFilter(_Strict):
    enabled: bool = True
    allow_tools: tuple[str, ...] = ()
    """Empty means every tool (seed 000)."""
    deny_tools: tuple[str, ...] = ()
    fixed_params: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Tool name → preset arguments, hidden from the model and merged in by the router (seeds 003/004)."""


class ServerConfig(ToolFilter):
    """One MCP server: seed 000's `mcp_servers` entry plus http/sse transports and a recording path."""

    id: str
    transport: Literal["stdio", "http", "sse"] = "stdio"
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    timeout_ms: int = Field(default=30_000, gt=0)
    """Bounds connecting (spawn + handshake) and each request, separately."""
    max_pages: int = Field(default=1000, gt=0)
    """`tools/list` pages followed before the listing is cut short (a paginator that never ends)."""
    deny_side_effect_tags: tuple[str, ...] = ()
    secrets: tuple[str, ...] = ()
    """Names of env vars and headers whose values are secret (never written anywhere)."""
    trusted: bool = False
    """Believe the server's tool annotations (`readOnlyHint`...) even where they lower a tool's risk."""
    recording: str | None = None
    """Where `toolc record` writes and `toolc compile` reads; default `recordings/<id>.json`."""

    @field_validator("command", mode="before")
    @classmethod
    def _split_command(cls, value: Any) -> Any:
        return shlex.split(value) if isinstance(value, str) else value

    @property
    def recording_path(self) -> str:
        return self.recording or f"recordings/{self.id}.json"


class RiskSettings(_Strict):
    """What the project file says about an OpenAPI source's operations per tool glob (on the tool's name or id),
    over what toolc infers from the method and the operation's words: like `trusted` for an MCP server, it may
    lower as well as raise. Where several globs match, the safe side wins (the highest risk, `read_only: false`)."""

    risk: dict[str, Literal["low", "medium", "high", "critical"]] = Field(default_factory=dict)
    """Glob → risk level (`"*revoke*": high`, `"search*": low`)."""
    read_only: dict[str, bool] = Field(default_factory=dict)
    """Glob → whether the operation changes nothing (`true` drops its write side effects, `false` adds one)."""

    @field_validator("risk", mode="before")
    @classmethod
    def _lower_levels(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {glob: level.lower() if isinstance(level, str) else level for glob, level in value.items()}
        return value

    @field_validator("risk", "read_only")
    @classmethod
    def _globs(cls, value: dict[str, Any]) -> dict[str, Any]:
        for glob in value:
            if not glob.strip():
                raise ValueError("a tool glob must not be empty")
        return value


class OpenApiConfig(RiskSettings, ToolFilter):
    id: str | None = None
    """Default: the file name without its suffix."""
    path: str
    base_url: str | None = None
    """Overrides the document's first `servers` entry."""


class RecordingConfig(ToolFilter):
    """A recorded MCP listing with no server behind it (the corpus captures, hand-made listings)."""

    id: str | None = None
    path: str
    trusted: bool = False
    """Believe the listing's tool annotations even where they lower a tool's risk (see `ServerConfig.trusted`)."""


class NamesConfig(_Strict):
    server_prefix: Literal["always", "never", "on-conflict"] = "on-conflict"
    separator: str = "__"
    namesake: Literal["raise", "rename", "skip", "override"] = "rename"


class ResolverConfig(_Strict):
    max_depth: int = Field(default=3, ge=0, le=32)
    """How far `inline` unrolls a recursive reference before pruning it."""
    node_budget: int = Field(default=200_000, gt=0)
    """How many schema nodes one resolution may produce before it stops (exponential fan-out)."""


class ProvidersConfig(_Strict):
    """Per-provider choices (`compiler.providers`)."""

    anthropic_strict: bool = False
    """Send Claude tools with `strict: true` where the schema and the per-request budgets allow it."""
    gemini_schema: Literal["parameters", "json-schema"] = "parameters"
    """Gemini declarations carry `parameters` (OpenAPI subset) or `parametersJsonSchema` (JSON Schema)."""
    max_inline_nodes: int = Field(default=10_000, gt=0)
    """Per-tool size budget of an inlined schema (schema objects): past it Claude gets shared `$defs` (TC451) and
    Gemini `parameters` leave the tool out (TC450), instead of one tool costing megabytes in every request."""


class ToolsetsConfig(_Strict):
    """How tools are grouped into toolsets (`compiler.fit.toolsets`): each fits its provider's request limits
    and is written as `schemas/toolsets/<name>.<target>.json`."""

    group_by: Literal["auto", "tag", "path", "server"] = "auto"
    """Tools no glob names: by MCP server / OpenAPI document, then its first tag (`tag`) or path segment (`path`);
    `auto`: a document's tag, else its first path segment; an MCP server's tools stay one set."""
    globs: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    """Toolset name → globs on tool ids or names (a tool may be in several toolsets)."""
    max_tools: int | None = Field(default=None, gt=0)
    """Split a toolset above this many tools (default: the smallest request limit of the targets)."""
    merge_related: bool = True
    """A document's groups whose tag or segment starts with the same word (`payment_intents`, `payment_links`)
    become one toolset while they fit one (`<source>-payment`)."""
    min_tools: int = Field(default=3, ge=1)
    """A document's group with fewer tools than this joins the document's `<source>-other` toolset (1: never)."""
    discovery: bool = True
    """Also emit the discovery form (`schemas/discovery.<target>.json`: search, describe, call by id)."""

    @field_validator("globs")
    @classmethod
    def _names(cls, value: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        for name in value:
            if not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,47}", name):
                raise ValueError(f"toolset name {name!r}: lower-case letters, digits, '_' and '-' (at most 48)")
        return value


class PolicyConfig(_Strict):
    """The router's policy, baked into generated code (seed 000's gates)."""

    allow_tools: tuple[str, ...] = ()
    deny_tools: tuple[str, ...] = ()
    deny_side_effect_tags: tuple[str, ...] = ()
    admin_tools: tuple[str, ...] = ()
    admin_token_env: str = "TOOLC_ADMIN_TOKEN"
    admin_min_risk: Literal["low", "medium", "high", "critical"] | None = "critical"
    """Tools at or above this risk need the admin token too (null: only `admin_tools` do)."""
    audit_db: str = Field(default="toolc_audit.sqlite3", min_length=1)
    """The router's SQLite audit file (`TOOLC_AUDIT_DB` overrides it at run time)."""
    max_concurrency: int = Field(default=10, gt=0)
    """Tool calls the router runs at once."""

    @field_validator("admin_min_risk", mode="before")
    @classmethod
    def _lower_risk(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value


class AuditConfig(_Strict):
    """Where the generated router keeps its audit trail: SQLite per process (`policy.audit_db`) unless a DSN."""

    dsn: str | None = None
    """A PostgreSQL DSN for the whole fleet, usually `${ENV}` (`codegen.router.audit`: a literal password is
    refused, TC670); `TOOLC_AUDIT_DSN` overrides it at run time."""


PERIODS = {"second": 1.0, "minute": 60.0, "hour": 3600.0, "day": 86400.0}


class RateLimitRule(_Strict):
    """One token bucket: `calls` per `per`, at most `burst` at once (default `calls`), for the calls whose tool
    (id or name), source and caller match the globs; one bucket per caller unless `per_caller: false`; shared by
    every router process through the audit's PostgreSQL when `fleet: true`."""

    tools: str = Field(default="*", min_length=1)
    source: str = Field(default="*", min_length=1)
    caller: str = Field(default="*", min_length=1)
    calls: int = Field(gt=0)
    per: Literal["second", "minute", "hour", "day"] = "minute"
    burst: int | None = Field(default=None, gt=0)
    per_caller: bool = True
    fleet: bool = False


class RateLimitsConfig(_Strict):
    """`gateway.rate_limits`: every rule a call matches takes a token (`templates/router/static/rate_limits.py`)."""

    rules: tuple[RateLimitRule, ...] = ()


class BudgetRule(_Strict):
    """Results of the calls whose tool (id or name), source and caller match the globs reach the model cut to
    `bytes` (UTF-8) or `tokens` (o200k)."""

    tools: str = Field(default="*", min_length=1)
    source: str = Field(default="*", min_length=1)
    caller: str = Field(default="*", min_length=1)
    bytes: int | None = Field(default=None, ge=1024)
    tokens: int | None = Field(default=None, ge=256)

    @model_validator(mode="after")
    def _one_unit(self) -> BudgetRule:
        if (self.bytes is None) == (self.tokens is None):
            raise ValueError("a result budget sets one of bytes or tokens")
        return self


class ResultBudgetConfig(_Strict):
    """`gateway.result_budget`: the first rule matching a call sets its result's budget
    (`templates/router/static/result_budget.py`)."""

    rules: tuple[BudgetRule, ...] = ()


class RetryRule(_Strict):
    """How often, and how long, an idempotent HTTP call the API answers 429/503 with `Retry-After` is sent again,
    for the calls whose tool (id or name), source and caller match the globs. A POST or PATCH never is."""

    tools: str = Field(default="*", min_length=1)
    source: str = Field(default="*", min_length=1)
    caller: str = Field(default="*", min_length=1)
    max_retries: int = Field(default=2, ge=0, le=10)
    max_wait_s: float = Field(default=5.0, ge=0, le=300)


class RetriesConfig(_Strict):
    """`gateway.retries`: the first rule matching a call bounds its retries (none: 2 retries, 5 s)."""

    rules: tuple[RetryRule, ...] = ()


class GatewayConfig(_Strict):
    """The router as a shared gateway: one sub-section per guard."""

    rate_limits: RateLimitsConfig = RateLimitsConfig()
    result_budget: ResultBudgetConfig = ResultBudgetConfig()
    retries: RetriesConfig = RetriesConfig()


class Config(_Strict):
    root: Path = Path(".")
    name: str = "toolc project"
    """Shown in generated code; never taken from the folder name, so a checkout compiles the same anywhere."""
    output: str = "generated"
    openapi: tuple[OpenApiConfig, ...] = ()
    recordings: tuple[RecordingConfig, ...] = ()
    mcp_servers: tuple[ServerConfig, ...] = ()
    targets: tuple[str, ...] = ALL_TARGETS
    names: NamesConfig = NamesConfig()
    resolver: ResolverConfig = ResolverConfig()
    policy: PolicyConfig = PolicyConfig()
    providers: ProvidersConfig = ProvidersConfig()
    toolsets: ToolsetsConfig = ToolsetsConfig()
    budgets: dict[str, int] = Field(default_factory=dict)
    """Token budget per target or alias (`openai: 20000`): no tools file toolc writes for it may cost more."""

    @field_validator("targets")
    @classmethod
    def _known_targets(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        """Aliases (`claude`, `openai`, `all`) stand for their targets, as on the command line; an unknown name
        is refused here, with the other problems of the file, and the nearest name suggested."""
        known = [*TARGETS, *ALIASES]
        unknown = [target for target in value if target not in known]
        if unknown:
            raise ValueError("; ".join(_unknown_name("target", name, known) for name in unknown))
        return tuple(dict.fromkeys(expanded for target in value for expanded in ALIASES.get(target, (target,))))

    @field_validator("budgets")
    @classmethod
    def _budget_targets(cls, value: dict[str, int]) -> dict[str, int]:
        known = [*TARGETS, *(alias for alias in ALIASES if alias != "all")]
        for key, tokens in value.items():
            if key not in known:
                raise ValueError(f"budgets: {_unknown_name('target', key, known)}")
            if tokens <= 0:
                raise ValueError(f"budgets: {key}: a budget is a positive number of tokens")
        return value
    audit: AuditConfig = AuditConfig()
    gateway: GatewayConfig = GatewayConfig()
    limits: Limits = Limits()
    """Resource limits (`compiler.infra.limits`): document size, nesting, aliases, numbers, names, memory."""
    codegen: bool = True
    """Emit typed Python stubs and the router under `<output>/python/`."""

    @property
    def output_dir(self) -> Path:
        return self.root / self.output

    def path(self, relative: str) -> Path:
        return (self.root / relative).resolve()


def _unknown_name(kind: str, name: str, known: list[str]) -> str:
    return f"unknown {kind} {name!r}" + (did_you_mean(name, known) or f"; choose from {', '.join(known)}")


def _invalid(message: str, source: str) -> CompilerError:
    return CompilerError(Diagnostic(code=INVALID_CONFIG, severity=Severity.ERROR, message=message, source=source))


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The model a field holds, through `X | None` and `tuple[X, ...]`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) in (tuple, list, Union, types.UnionType):
        for argument in get_args(annotation):
            found = _model_of(argument)
            if found is not None:
                return found
    return None


def _keys_at(loc: tuple[int | str, ...]) -> list[str]:
    """The keys the section at `loc` accepts (list indexes skipped)."""
    model: type[BaseModel] | None = Config
    for part in loc:
        if isinstance(part, int) or model is None:
            continue
        field = model.model_fields.get(part)
        model = _model_of(field.annotation) if field is not None else None
    return [name for name in model.model_fields if name != "root"] if model is not None else []


def _pointer(loc: tuple[int | str, ...]) -> str:
    return "".join(f"/{part}" for part in loc)


def _explain_all(errors: list[ErrorDetails]) -> list[tuple[str, str]]:
    """(message, JSON pointer) for every validation error, in the file's order. An unknown key names the nearest
    valid one; a required key that an unknown key misspells (`pathh` for `path`) is said once, at the typo, not
    as a bare "Field required". The pointer is the diagnostic's location, so the message does not repeat it."""
    missing = {tuple(error["loc"]) for error in errors if error["type"] == "missing"}
    explained: list[tuple[str, str]] = []
    covered: set[tuple[int | str, ...]] = set()
    for error in errors:
        loc = tuple(error["loc"])
        if error["type"] != "extra_forbidden" or not loc:
            continue
        valid = _keys_at(loc[:-1])
        near = nearest(str(loc[-1]), valid)
        if near is not None:
            required = (*loc[:-1], near) in missing
            covered.add((*loc[:-1], near))
            hint = f"; did you mean {near!r}?" + (f" ({near!r} is required)" if required else "")
        else:
            hint = f"; valid keys: {', '.join(valid)}"
        explained.append((f"unknown key {str(loc[-1])!r}{hint}", _pointer(loc)))
    explained += [(str(error["msg"]).removeprefix("Value error, "), _pointer(tuple(error["loc"])))
                  for error in errors if error["type"] != "extra_forbidden" and tuple(error["loc"]) not in covered]
    return sorted(explained, key=lambda item: item[1])


def input_kind(data: Any) -> str | None:
    """`openapi` / `mcp-recording` when `data` is an input document rather than a project file (whose `openapi:`
    is a list of documents)."""
    kind = detect_kind(data)
    if kind == "openapi" and isinstance(data, dict) and isinstance(data.get("openapi"), list):
        return None
    return kind


def config_from_data(data: Any, *, root: Path, source: str) -> Config:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise _invalid("a project file must be a mapping", source)
    kind = input_kind(data)
    if kind is not None:
        what = "an OpenAPI document" if kind == "openapi" else "an MCP tool listing"
        raise _invalid(f"this is {what}, not a project file: pass it as PATH (e.g. `toolc list {source}`)", source)
    try:
        data = normalize_server_shapes(data)
    except ShapeError as exc:
        raise _invalid(str(exc), source) from None
    try:
        return Config.model_validate({**data, "root": root})
    except ValidationError as exc:
        raise CompilerError(*(Diagnostic(code=INVALID_CONFIG, severity=Severity.ERROR, source=source,
                                         pointer=pointer, message=message)
                              for message, pointer in _explain_all(exc.errors()))) from None


def load_config(path: Path) -> Config:
    display = str(path)
    data = load_document(path, display=display)
    return config_from_data(data, root=path.resolve().parent, source=display)
