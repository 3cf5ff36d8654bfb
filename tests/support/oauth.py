"""An OAuth 2.1 authorization server on loopback, for the callers tests (issue 25): key pairs made here, their
JWKS, RFC 8414 metadata, dynamic client registration, an authorization endpoint that approves at once (PKCE
S256 checked) and a token endpoint that issues RS256 JWT access tokens for the resource asked for. Every request
is recorded (`Issuer.requests`), so a test sees what the client and the resource server fetched."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Iterator
from typing import Any, ClassVar
from urllib.parse import parse_qsl, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from tests.support.loopback import QuietHandler, loopback_http

KID = "k1"


def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class Keys:
    """The issuer's signing key (RS256, `kid` k1), an EC key it also publishes (ES256, k2), and a stranger's key."""

    def __init__(self) -> None:
        self.signing = rsa_key()
        self.ec = ec.generate_private_key(ec.SECP256R1())
        self.stranger = rsa_key()

    def jwks(self) -> dict[str, Any]:
        first = json.loads(RSAAlgorithm.to_jwk(self.signing.public_key()))
        second = json.loads(ECAlgorithm.to_jwk(self.ec.public_key()))
        return {"keys": [{**first, "kid": KID, "use": "sig", "alg": "RS256"}, {**second, "kid": "k2", "use": "sig"}]}

    def public_pem(self) -> bytes:
        return self.signing.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo)


class Issuer(QuietHandler):
    """The authorization server. Class state: set `keys`, `issuer` and `resource` before serving."""

    keys: ClassVar[Keys]
    issuer: ClassVar[str] = ""
    requests: ClassVar[list[str]] = []
    codes: ClassVar[dict[str, dict[str, str]]] = {}
    issued: ClassVar[list[str]] = []
    grantable: ClassVar[frozenset[str]] = frozenset()
    """The scopes the user consents to: a token gets those of the scopes asked for."""

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        Issuer.requests.append(f"GET {url.path}")
        if url.path == "/jwks.json":
            self.send_json(200, json.dumps(self.keys.jwks()).encode())
        elif url.path == "/.well-known/oauth-authorization-server":
            self.send_json(200, json.dumps(self.metadata()).encode())
        elif url.path == "/authorize":
            self.authorize(dict(parse_qsl(url.query)))
        else:
            self.send_json(404, b"{}")

    def do_POST(self) -> None:
        url = urlsplit(self.path)
        Issuer.requests.append(f"POST {url.path}")
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if url.path == "/register":
            client = json.loads(body)
            registered = {**client, "client_id": f"client-{secrets.token_hex(4)}",
                          "client_id_issued_at": int(time.time()), "token_endpoint_auth_method": "none"}
            self.send_json(201, json.dumps(registered).encode())
        elif url.path == "/token":
            self.token(dict(parse_qsl(body.decode())))
        else:
            self.send_json(404, b"{}")

    @classmethod
    def metadata(cls) -> dict[str, Any]:
        return {"issuer": cls.issuer, "authorization_endpoint": f"{cls.issuer}/authorize",
                "token_endpoint": f"{cls.issuer}/token", "registration_endpoint": f"{cls.issuer}/register",
                "jwks_uri": f"{cls.issuer}/jwks.json", "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code"], "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"]}

    def authorize(self, query: dict[str, str]) -> None:
        code = secrets.token_urlsafe(16)
        Issuer.codes[code] = query
        target = f"{query['redirect_uri']}?{urlencode({'code': code, 'state': query['state']})}"
        self.send_response(302)
        self.send_header("Location", target)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def token(self, form: dict[str, str]) -> None:
        asked = Issuer.codes.pop(form.get("code", ""), None)
        verifier = form.get("code_verifier", "").encode()
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=").decode()
        if asked is None or asked["code_challenge"] != challenge:
            self.send_json(400, b'{"error": "invalid_grant"}')
            return
        scope = " ".join(s for s in asked.get("scope", "").split() if s in Issuer.grantable)
        access = sign(self.keys, sub="agent-7", scope=scope, aud=form.get("resource") or asked.get("resource", ""),
                      iss=self.issuer, client_id=form["client_id"])
        Issuer.issued.append(access)
        self.send_json(200, json.dumps({"access_token": access, "token_type": "Bearer", "expires_in": 300,
                                        "scope": scope}).encode())


def sign(keys: Keys, *, sub: str | None = "alice", scope: str = "", aud: str | list[str] = "", iss: str = "",
         client_id: str | None = "cli-1", expires_in: int = 300, key: Any = None, alg: str = "RS256",
         kid: str | None = KID, **claims: Any) -> str:
    """A JWT access token; `key` defaults to the issuer's signing key."""
    now = int(time.time())
    payload = {"iss": iss, "aud": aud, "iat": now, "exp": now + expires_in, "scope": scope, **claims}
    if sub is not None:
        payload["sub"] = sub
    if client_id is not None:
        payload["client_id"] = client_id
    headers = {"kid": kid} if kid is not None else {}
    return jwt.encode(payload, keys.signing if key is None else key, algorithm=alg, headers=headers)


def _part(data: dict[str, Any] | bytes) -> str:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def unsigned(payload: dict[str, Any]) -> str:
    """A token with `alg: none` and no signature, built by hand (PyJWT will not make one with a kid)."""
    return f"{_part({'alg': 'none', 'typ': 'JWT', 'kid': KID})}.{_part(payload)}."


def hmac_signed(payload: dict[str, Any], secret: bytes) -> str:
    """The algorithm-confusion attack: HS256 keyed with the issuer's public key (which anyone can fetch), built by
    hand (PyJWT refuses to use a PEM key as an HMAC secret)."""
    signing_input = f"{_part({'alg': 'HS256', 'typ': 'JWT', 'kid': KID})}.{_part(payload)}"
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{_part(signature)}"


@contextlib.contextmanager
def issuer_server(keys: Keys) -> Iterator[str]:
    """The authorization server on 127.0.0.1:<free port>; yields its issuer URL."""
    Issuer.keys, Issuer.requests, Issuer.codes, Issuer.issued = keys, [], {}, []
    with loopback_http(Issuer) as url:
        Issuer.issuer = url
        yield url

