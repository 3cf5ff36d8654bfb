"""The project file's `gateway.auth` section → what the generated router bakes (`GATEWAY_AUTH`, a `CallerAuthSpec`).

Scopes and claims become one list of grants (`scope` is the claim of a scope grant), in the file's order. The
JWKS is baked as written when it is a URL or a file (read by the server when it starts, relative to the
project folder it runs in), or as JSON when it is inline: only public keys may be.

    TC660 error    the JWKS (inline, or the file as it is at compile time) holds no usable signature key
    TC661 error    the JWKS holds private key material (`d`, `p`, `q`...; or a symmetric `oct` key): an inline
                   one would be written into generated code, and a resource server needs public keys only
    TC662 warning  the JWKS file is not there at compile time (the server refuses to start without it)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from compiler.config import CallerAuthConfig, Config
from compiler.infra.diagnostics import Diagnostics

UNUSABLE_JWKS = "TC660"
PRIVATE_JWKS = "TC661"
MISSING_JWKS = "TC662"

_PRIVATE_MEMBERS = ("d", "p", "q", "dp", "dq", "qi", "k")
"""JWK members that hold private or secret key material (RFC 7518 section 6)."""
_SIGNATURE_TYPES = ("RSA", "EC", "OKP")
_POINTER = "/gateway/auth/jwks"


def _jwks_kind(jwks: str | dict[str, Any]) -> str:
    if isinstance(jwks, dict):
        return "inline"
    return "url" if jwks.startswith(("https://", "http://")) else "file"


def _check_keys(data: Any, where: str, diagnostics: Diagnostics) -> bool:
    """Whether `data` is a JWKS of public signature keys; each problem reported."""
    keys = data.get("keys") if isinstance(data, dict) else None
    if not isinstance(keys, list):
        diagnostics.report(UNUSABLE_JWKS, f"{where} is not a JWKS (an object with a `keys` list)",
                          source="gateway", pointer=_POINTER)
        return False
    secret = [str(key.get("kid", index)) for index, key in enumerate(keys)
              if isinstance(key, dict) and any(member in key for member in _PRIVATE_MEMBERS)]
    if secret:
        diagnostics.report(PRIVATE_JWKS, f"{where} holds private or symmetric key material (keys "
                          f"{', '.join(secret)}): give the issuer's public keys only", source="gateway",
                          pointer=_POINTER)
        return False
    if not any(isinstance(key, dict) and key.get("kty") in _SIGNATURE_TYPES for key in keys):
        diagnostics.report(UNUSABLE_JWKS, f"{where} holds no RSA, EC or OKP signature key",
                          source="gateway", pointer=_POINTER)
        return False
    return True


def _checked_jwks(auth: CallerAuthConfig, root: Path, diagnostics: Diagnostics) -> str | None:
    """The JWKS as baked (URL, path or JSON text), or None when it must not be."""
    jwks = auth.jwks
    kind = _jwks_kind(jwks)
    if kind == "inline":
        assert isinstance(jwks, dict)
        ok = _check_keys(jwks, "gateway.auth.jwks", diagnostics)
        return json.dumps(jwks, sort_keys=True, separators=(",", ":")) if ok else None
    assert isinstance(jwks, str)
    if kind == "file":
        path = root / jwks
        try:
            data = json.loads(path.read_bytes())
        except FileNotFoundError:
            diagnostics.report(MISSING_JWKS, f"the JWKS file {jwks} is not there: the server will refuse to "
                                "start until it is", source="gateway", pointer=_POINTER)
            return jwks
        except (OSError, ValueError) as exc:
            diagnostics.report(UNUSABLE_JWKS, f"cannot read the JWKS file {jwks}: {exc}", source="gateway",
                              pointer=_POINTER)
            return None
        if not _check_keys(data, f"the JWKS file {jwks}", diagnostics):
            return None
    return jwks


def caller_auth(config: Config, diagnostics: Diagnostics) -> dict[str, Any] | None:
    """The fields of the baked `CallerAuthSpec`, or None (no `gateway.auth`, or a JWKS that must not be baked)."""
    auth = config.gateway.auth
    if auth is None:
        return None
    jwks = _checked_jwks(auth, config.root, diagnostics)
    if jwks is None:
        return None
    grants = [("scope", scope, tools) for scope, tools in auth.scopes.items()]
    grants += [(claim, value, tools) for claim, values in auth.claims.items() for value, tools in values.items()]
    return {
        "issuer": auth.issuer,
        "resource": auth.resource,
        "jwks": jwks,
        "jwks_kind": _jwks_kind(auth.jwks),
        "authorization_servers": auth.authorization_servers,
        "algorithms": auth.algorithms,
        "leeway_s": auth.leeway_s,
        "required_scopes": auth.required_scopes,
        "grants": grants,
    }
