"""Keeping secrets out of reprs, logs, events and error messages.

A value is secret when its key contains one of :data:`SECRET_MARKERS`
(``ipmi_password``, ``redfish_password``, ``auth_token``, ``ssh_key``, ...),
matching how operators name such things in ``driver_info``.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["MASK", "SECRET_MARKERS", "is_secret_key", "mask_secrets", "scrub", "secret_values"]

#: Substrings that make a key secret.
SECRET_MARKERS: Final = ("password", "secret", "token", "key")

#: What a secret value is replaced by.
MASK: Final = "******"


def is_secret_key(key: object) -> bool:
    """Whether values stored under ``key`` must never be shown."""
    if not isinstance(key, str):
        return False
    lowered = key.lower()
    return any(marker in lowered for marker in SECRET_MARKERS)


def mask_secrets(value: Any) -> Any:
    """A copy of ``value`` with every secret (at any depth) replaced by :data:`MASK`."""
    if isinstance(value, dict):
        return {
            k: (MASK if is_secret_key(k) and v is not None else mask_secrets(v))
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return type(value)(mask_secrets(v) for v in value)
    return value


def secret_values(*containers: Any) -> set[str]:
    """Every secret string value (at any depth) in the given dicts."""
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if is_secret_key(k) and isinstance(v, (str, bytes)) and len(v) >= 3:
                    found.add(v.decode(errors="replace") if isinstance(v, bytes) else v)
                else:
                    walk(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v)

    for container in containers:
        walk(container)
    return found


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
