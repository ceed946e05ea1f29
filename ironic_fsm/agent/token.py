"""The agent token and the agent's other fields in ``driver_internal_info``.

The token is the only credential of the agent's two API calls (lookup and
heartbeat need no API user: a ramdisk holds none). It is made at the first
lookup a node allows, given out that once, and then proves on every
heartbeat that the agent speaking is the one that looked the node up.
Powering the node off or rebooting it ends that agent, and so the token:
:func:`wipe` runs there and on every flow failure, so that the next agent
looks up afresh.

The keys are Ironic's, so that tools reading ``driver_internal_info`` find
the same names. ``agent_secret_token`` holds both markers of
:mod:`ironic_fsm.masking` (``secret``, ``token``): every view of a node
(``repr``, API responses, events, history) shows it as ``******``.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from datetime import datetime
from typing import Any, Final

from ironic_fsm.masking import MASK

__all__ = [
    "AGENT_KEYS",
    "CA_KEY",
    "LAST_HEARTBEAT_KEY",
    "MASK",
    "TOKEN_KEY",
    "URL_KEY",
    "VERSION_KEY",
    "has_token",
    "issue",
    "record_heartbeat",
    "token_matches",
    "wipe",
]

#: The token the agent must send (Ironic's key).
TOKEN_KEY: Final = "agent_secret_token"
#: Set when a token was made before the ramdisk booted (virtual media); wiped with it.
_PREGENERATED_KEY: Final = "agent_secret_token_pregenerated"
#: The agent's own API, as its heartbeats give it: where commands go. Pinned once known.
URL_KEY: Final = "agent_url"
#: The agent's self-signed certificate (PEM), pinned from its first heartbeat that sends one.
CA_KEY: Final = "agent_verify_ca"
#: When the last accepted heartbeat arrived (ISO 8601, UTC) and the agent version it named.
LAST_HEARTBEAT_KEY: Final = "agent_last_heartbeat"
VERSION_KEY: Final = "agent_version"
#: What one agent's life leaves behind, wiped together.
AGENT_KEYS: Final = (TOKEN_KEY, _PREGENERATED_KEY, URL_KEY, CA_KEY)


def has_token(info: Mapping[str, Any]) -> bool:
    """Whether a token is on file (a lookup already gave one out)."""
    return info.get(TOKEN_KEY) is not None


def issue(info: MutableMapping[str, Any]) -> str:
    """Make a token, store it in ``info`` and return it; :data:`MASK` if one is on file.

    An agent restarted behind the conductor's back gets :data:`MASK`, which
    it cannot heartbeat with: only a new boot (which wipes the token) lets
    a new agent in.
    """
    if has_token(info):
        return MASK
    import secrets  # here, not at import: it pulls in hashlib and OpenSSL

    token = secrets.token_urlsafe()
    info[TOKEN_KEY] = token
    info.pop(_PREGENERATED_KEY, None)
    return token


def token_matches(info: Mapping[str, Any], token: str | None) -> bool:
    """Whether ``token`` is the one on file (no token, or none on file, never matches)."""
    known = info.get(TOKEN_KEY)
    if token is None or not isinstance(known, str) or known == MASK:
        return False
    import hmac  # here, not at import: it pulls in hashlib and OpenSSL

    return hmac.compare_digest(known.encode(), token.encode())


def record_heartbeat(
    info: MutableMapping[str, Any],
    now: datetime,
    callback_url: str,
    agent_version: str,
    agent_verify_ca: str | None,
) -> None:
    """Note an accepted heartbeat: where the agent listens, its version, when, its certificate."""
    info[URL_KEY] = callback_url
    info[VERSION_KEY] = agent_version
    info[LAST_HEARTBEAT_KEY] = now.isoformat()
    if agent_verify_ca:
        info[CA_KEY] = agent_verify_ca


def wipe(info: MutableMapping[str, Any]) -> bool:
    """Forget the agent: its token, URL and certificate. Whether anything was there."""
    found = False
    for key in AGENT_KEYS:
        if info.pop(key, None) is not None:
            found = True
    return found
