"""HTTP basic authentication against an Apache htpasswd file, bcrypt entries only.

Ironic and Metal3 deploy it this way; weaker hashes (MD5, SHA-1, crypt)
are refused when the file is read, not when a user happens to log in.
Failures use Ironic's own ``{"error": {...}}`` body, not ``error_message``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import threading
from pathlib import Path
from typing import Final

import bcrypt
import falcon

from ironic_fsm.api.errors import AuthFailed
from ironic_fsm.exceptions import InvalidParameterValue

__all__ = ["BasicAuth", "read_htpasswd"]

_BCRYPT_PREFIXES: Final = ("$2y$", "$2a$", "$2b$")
#: Routes reached before there are credentials, as Ironic's ``acl_public_routes``:
#: version discovery (clients ask it before they authenticate), and the ramdisk
#: agent's three calls (it holds no credentials; an agent token guards them).
#: Whole paths only, each with an optional ``.json``, as Ironic matches them. Beside
#: them the health probes, which Kubernetes asks without credentials and which
#: show nothing of the nodes.
_PUBLIC: Final = re.compile(
    r"(?:/|/v1|/v1/lookup|/v1/heartbeat/[a-z0-9\-]+|/v1/continue_inspection)(?:\.json)?"
    r"|/healthz|/readyz"
)
#: bcrypt reads at most this many bytes of a password. ``htpasswd -B`` hashes the
#: first 72 of a longer one and its users type the whole; bcrypt 5 refuses more
#: with ValueError, so the check truncates as the file's writer did.
_BCRYPT_MAX_BYTES: Final = 72
#: Verified credentials remembered (as digests), so that bcrypt's deliberate
#: slowness is paid once per client rather than on every request.
_CACHE_SIZE: Final = 256


def read_htpasswd(path: str) -> dict[str, bytes]:
    """``user -> bcrypt hash`` from ``path``; any other hash or a malformed line is an error."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise InvalidParameterValue(f"Cannot read the htpasswd file {path}: {error}") from None
    users: dict[str, bytes] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        user, sep, digest = line.strip().partition(":")
        if not sep or not user or not digest.startswith(_BCRYPT_PREFIXES):
            # Never echo the line: it holds a password hash.
            raise InvalidParameterValue(
                f"{path} line {number}: only bcrypt entries are accepted "
                "(create them with 'htpasswd -nbB USER PASSWORD')"
            )
        users[user] = digest.encode()
    return users


def _public(path: str) -> bool:
    return _PUBLIC.fullmatch(path.rstrip("/") or "/") is not None


def _refuse(status: int, message: str) -> AuthFailed:
    return AuthFailed(status, message)


class BasicAuth:
    """Falcon middleware: every non-public request needs a user of the htpasswd file."""

    def __init__(self, users: dict[str, bytes]) -> None:
        self._users = users
        self._verified: dict[bytes, None] = {}
        self._lock = threading.Lock()

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        if _public(req.path):
            return
        header = req.get_header("Authorization")
        if not header:
            raise _refuse(401, "Authorization required")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "basic":
            raise _refuse(400, "Unsupported authorization type")
        try:
            user, sep, password = (
                base64.b64decode(token.strip(), validate=True).decode().partition(":")
            )
        except (binascii.Error, UnicodeDecodeError):
            raise _refuse(400, "Invalid authorization header") from None
        if not sep:
            raise _refuse(400, "Invalid authorization header")
        if not self._check(user, password.encode()):
            raise _refuse(401, "Incorrect username or password")
        req.context.user = user

    def _check(self, user: str, password: bytes) -> bool:
        digest = self._users.get(user)
        if digest is None:
            return False
        key = hashlib.sha256(digest + b"\0" + password).digest()
        with self._lock:
            if key in self._verified:
                return True
        if not bcrypt.checkpw(password[:_BCRYPT_MAX_BYTES], digest):
            return False
        with self._lock:
            if len(self._verified) >= _CACHE_SIZE:
                self._verified.pop(next(iter(self._verified)))
            self._verified[key] = None
        return True
