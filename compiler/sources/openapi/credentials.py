"""Parameters that carry the API's credential: filled by the router from it, never asked of the model.

Documents often declare the credential a second time as a parameter: a chat API lists `token` (query or header) in
123 of its 174 operations beside its OAuth scheme, and some APIs declare their API key's own header as a parameter
too. Left in the input schema, the model is asked for the user's credential. A parameter is the credential's when
its scheme is among the operation's security alternatives and

- it is an `apiKey` scheme's own key (same location and name; header names case-insensitive), or
- it is a query, header or cookie parameter named `token` or `access_token` (RFC 6750's query name) and the
  scheme is a bearer-token one (`oauth2`, `openIdConnect`, `http` `bearer`).

Such a parameter leaves the model's schema and records its scheme (`CredentialArgument`); the router fills it
from the scheme's credential (`TOOLC_<API>_<SCHEME>`) and refuses a model argument naming it. A preset on the
parameter wins (it was pinned first). Reported once per source (TC319, info).
"""

from __future__ import annotations

import dataclasses

from compiler.infra.diagnostics import Diagnostics
from compiler.ir import CredentialArgument, HttpArgument, HttpBinding, SecurityScheme, Tool
from compiler.sources.openapi.codes import CREDENTIAL_PARAMETER
from compiler.sources.openapi.parameters import Field
from compiler.sources.openapi.presets import credential_key

TOKEN_NAMES = frozenset({"token", "access_token"})
_BEARER_TYPES = frozenset({"oauth2", "openIdConnect"})
_LOCATIONS = ("query", "header", "cookie")
_ARGUMENT_FIELDS = tuple(field.name for field in dataclasses.fields(HttpArgument))


def credential_parameters(fields: list[Field], security: tuple[tuple[SecurityScheme, ...], ...],
                          pinned: set[int]) -> dict[int, str]:
    """`id()` of each field that carries a credential → its scheme's name (`pinned`: fields a preset holds)."""
    schemes = [scheme for alternative in security for scheme in alternative]
    bearer = next((scheme.name for scheme in schemes if _is_bearer(scheme)), None)
    api_keys = {credential_key(scheme): scheme.name for scheme in schemes if scheme.type == "apiKey"}
    found: dict[int, str] = {}
    for field in fields:
        if id(field) in pinned or field.location not in _LOCATIONS:
            continue
        key = (field.location, field.wire_name.lower() if field.location == "header" else field.wire_name)
        if key in api_keys:
            found[id(field)] = api_keys[key]
        elif bearer is not None and field.wire_name.lower() in TOKEN_NAMES:
            found[id(field)] = bearer
    return found


def _is_bearer(scheme: SecurityScheme) -> bool:
    return scheme.type in _BEARER_TYPES or (scheme.type == "http" and scheme.scheme == "bearer")


def with_credential(argument: HttpArgument, scheme: str | None) -> HttpArgument:
    if scheme is None:
        return argument
    return CredentialArgument(**{name: getattr(argument, name) for name in _ARGUMENT_FIELDS}, credential=scheme)


def report_credential_parameters(tools: list[Tool], diagnostics: Diagnostics, location: str) -> None:
    """One TC319 per source: how many operations declare a credential as a parameter, and which."""
    carried = sorted({(argument.location, argument.wire_name, argument.credential) for tool in tools
                      if isinstance(tool.binding, HttpBinding) for argument in tool.binding.arguments
                      if isinstance(argument, CredentialArgument)})
    if not carried:
        return
    count = sum(1 for tool in tools if isinstance(tool.binding, HttpBinding)
                and any(isinstance(argument, CredentialArgument) for argument in tool.binding.arguments))
    which = ", ".join(f"{where} {name!r} (scheme {scheme!r})" for where, name, scheme in carried)
    diagnostics.info(CREDENTIAL_PARAMETER, f"{count} operation(s) declare the credential as a parameter: {which}; "
                     "hidden from the model, the router fills it from the scheme's credential", source=location)
