"""Keeping secrets out of reprs, logs, events and error messages.

A value is secret when its key contains one of :data:`SECRET_MARKERS`
(``ipmi_password``, ``redfish_password``, ``auth_token``, ``ssh_key``, ...),
matching how operators name such things in ``driver_info``. The markers
include every key name Ironic masks in its API responses (oslo.utils'
``mask_dict_password`` list: ``sys_pswd``, ``ssh_passphrase``, ``new_pass``,
``configdrive``, ...), compared the same way (a substring of the lowered
key), so a record shows here what Ironic would show of it, or less.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Final

__all__ = [
    "MASK", "SECRET_MARKERS", "is_secret_key", "mask_secrets", "masked", "scrub", "secret_values",
]  # fmt: skip

#: Substrings that make a key secret: ours, then those of Ironic's list that ours miss.
SECRET_MARKERS: Final = (
    "password", "secret", "token", "key",
    "adminpass", "admin_pass", "new_pass", "sys_pswd", "passphrase", "configdrive",
    "cephclusterfsid", "rabbitcookie", "keystonecredential", "barbicansimplecryptokek",
    "swifthashsuffix",
)  # fmt: skip

#: What a secret value is replaced by.
MASK: Final = "******"


def is_secret_key(key: object) -> bool:
    """Whether values stored under ``key`` must never be shown."""
    if not isinstance(key, str):
        return False
    if len(key) <= _CACHED_KEY_LENGTH:
        return _secret_text(key)
    return _MARKED.search(key.lower()) is not None


def mask_secrets(value: Any) -> Any:
    """A copy of ``value`` with every secret (at any depth) replaced by :data:`MASK`."""
    if type(value) is dict and (not value or _plain(value)):  # most dicts: nothing to walk
        return value.copy()
    if isinstance(value, dict):
        return {
            k: (MASK if is_secret_key(k) and v is not None else mask_secrets(v))
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return type(value)(mask_secrets(v) for v in value)
    return value


def masked(value: Any) -> Any:
    """``value`` itself when nothing in it is secret, else :func:`mask_secrets`'s copy.

    For what is encoded at once and never changed (a page of node views):
    a dict without secrets is then not copied.
    """
    if type(value) is dict and (not value or _plain(value)):
        return value
    return mask_secrets(value)


def secret_values(*containers: Any) -> set[str]:
    """Every secret string value (at any depth) in the given dicts."""
    found: set[str] = set()
    for container in containers:
        flat = _flat_secrets(container)
        if flat is None:
            _walk(container, found)
        else:
            found.update(flat)
    return found


def _walk(value: Any, found: set[str]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            if is_secret_key(k) and isinstance(v, (str, bytes)) and len(v) >= 3:
                found.add(v.decode(errors="replace") if isinstance(v, bytes) else v)
            else:
                _walk(v, found)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _walk(v, found)


#: Any secret marker, found in a dict's keys joined by newlines (no marker holds one).
_MARKED: Final = re.compile("|".join(map(re.escape, SECRET_MARKERS)))
#: Values that hold no other value: a dict of only these has no secret deeper down.
_FLAT: Final = frozenset({str, int, float, bool, type(None)})
_NONE: Final[frozenset[str]] = frozenset()
#: Keys already seen to name no secret (a fleet's dicts share a handful), up to a bound.
#: Two caches on purpose, this set and :func:`_secret_text`'s answers: "no key of this dict
#: is secret" stays one set operation, and a secret key is not searched again. One cache
#: cost more a page of 1,000 nodes (callgrind, instructions a page: the set alone, secret
#: keys searched each time, +1.6%; a dict of every key's answer, +4.1%).
_PLAIN_KEYS: set[str] = set()
_PLAIN_KEYS_MAX: Final = 4096


def _flat_secrets(container: object) -> frozenset[str] | None:
    """The secrets of a flat dict of text keys, cheaply; ``None``: anything else (walk it).

    Scrubbing runs on every error text and history entry (see :func:`_plain_keys`).
    """
    if type(container) is not dict:
        return None
    if not _FLAT.issuperset(map(type, container.values())):
        return None
    plain = _plain_keys(container)
    if plain is None:
        return None
    if plain:
        return _NONE
    return frozenset(
        v for k, v in container.items() if type(v) is str and len(v) >= 3 and is_secret_key(k)
    )


def _plain(container: dict[Any, Any]) -> bool:
    """Whether a dict has nothing to mask at any depth: flat, its keys text naming no secret."""
    return _FLAT.issuperset(map(type, container.values())) and _plain_keys(container) is True


def _plain_keys(container: dict[Any, Any]) -> bool | None:
    """Whether every key of a dict is text naming no secret (``None``: a key is not text,
    the one place that is checked), cheaply.

    Most nodes' dicts name no secret, which keys seen before tell in one
    set lookup, and new ones joined in one string (one search, in C).
    """
    if _PLAIN_KEYS.issuperset(container):
        return True
    if not all(type(k) is str for k in container):
        return None
    if _MARKED.search("\n".join(container).lower()) is not None:
        return False
    if len(_PLAIN_KEYS) < _PLAIN_KEYS_MAX:
        _PLAIN_KEYS.update(container)
    return True


#: Keys up to this long have their answer remembered (a fleet's dicts share a handful).
_CACHED_KEY_LENGTH: Final = 64


@functools.lru_cache(maxsize=4096)
def _secret_text(key: str) -> bool:
    return _MARKED.search(key.lower()) is not None


def scrub(text: str, secrets: set[str]) -> str:
    """``text`` with every occurrence of a secret value replaced by :data:`MASK`.

    Error messages come from drivers and BMC libraries, which sometimes echo
    what they were given; this keeps such echoes out of ``last_error``,
    events and logs.
    """
    for secret in sorted(secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    return text
