"""Microversions: which version a request asked for, and the documents that advertise them.

Clients negotiate from the headers alone (docs/api-server.rst, "Versions"):
keystoneauth sends both headers, ironicclient starts with ``latest``-like
numbers and falls back to the range it reads from the 406 response, so
the range headers go on every response, errors included.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "MAX_VERSION",
    "MIN_VERSION",
    "NotAcceptable",
    "Version",
    "negotiate",
    "root_document",
    "v1_document",
    "version_text",
]

#: A microversion as ``(major, minor)``; tuples compare the way versions do.
Version = tuple[int, int]

MIN_VERSION: Final[Version] = (1, 1)
#: The highest version whose verbs and fields this server serves (runbooks need 1.92;
#: 1.89's virtual media is not served: see docs/api-server.rst). Fields we do not store
#: are shown with their empty value.
MAX_VERSION: Final[Version] = (1, 92)

_HEADER_NEW: Final = "OpenStack-API-Version"
_HEADER_OLD: Final = "X-OpenStack-Ironic-API-Version"
_NUMBER: Final = re.compile(r"^(\d+)\.(\d+)$")


class NotAcceptable(Exception):
    """A version the service cannot serve: answered with 406 and the supported range."""


def version_text(version: Version) -> str:
    return f"{version[0]}.{version[1]}"


def _requested(headers: Mapping[str, str]) -> str | None:
    """The version string the client sent; ``OpenStack-API-Version`` wins."""
    new = headers.get(_HEADER_NEW.upper())
    if new is not None:
        for part in new.split(","):
            service, _, value = part.strip().partition(" ")
            if service.lower() == "baremetal":
                return value.strip()
    return headers.get(_HEADER_OLD.upper())


def negotiate(headers: Mapping[str, str]) -> Version:
    """The version a request is served at: none means the minimum, ``latest`` the maximum.

    ``headers`` maps upper-cased header names to values (Falcon's ``req.headers``).
    """
    text = _requested(headers)
    if text is None:
        return MIN_VERSION
    if text.lower() == "latest":
        return MAX_VERSION
    match = _NUMBER.match(text)
    if match is None:
        raise NotAcceptable(f"Invalid value for {_HEADER_OLD} header: {text}")
    version = (int(match.group(1)), int(match.group(2)))
    if version[0] != MIN_VERSION[0]:
        raise NotAcceptable(
            f"Mutually exclusive versions requested. Version {text} requested but not "
            f"supported by this service. The supported version range is: "
            f"[{version_text(MIN_VERSION)}, {version_text(MAX_VERSION)}]."
        )
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise NotAcceptable(
            f"Version {text} was requested but the minor version is not supported by "
            f"this service. The supported version range is: "
            f"[{version_text(MIN_VERSION)}, {version_text(MAX_VERSION)}]."
        )
    return version


def _link(href: str, rel: str, **extra: str) -> dict[str, str]:
    return {"href": href, "rel": rel, **extra}


def _version_object(base: str) -> dict[str, Any]:
    return {
        "id": "v1",
        "links": [_link(f"{base}/v1/", "self")],
        "status": "CURRENT",
        "min_version": version_text(MIN_VERSION),
        "version": version_text(MAX_VERSION),
    }


def root_document(base: str) -> dict[str, Any]:
    """``GET /``: what keystoneauth reads to learn the range."""
    version = _version_object(base)
    return {
        "name": "OpenStack Ironic API",
        "description": "Ironic-compatible bare metal API served by ironic_fsm.",
        "default_version": version,
        "versions": [version],
    }


#: Resources listed by ``GET /v1``, with the version that introduced each.
_RESOURCES: Final[tuple[tuple[str, Version], ...]] = (
    ("nodes", (1, 1)),
    ("ports", (1, 1)),
    ("drivers", (1, 1)),
    ("conductors", (1, 49)),
    ("deploy_templates", (1, 55)),
    ("shards", (1, 82)),
    ("runbooks", (1, 92)),
)


def v1_document(base: str, version: Version) -> dict[str, Any]:
    """``GET /v1``: the resources this version offers."""
    doc: dict[str, Any] = {
        "id": "v1",
        "links": [
            _link(f"{base}/v1/", "self"),
            _link("https://docs.openstack.org/ironic/latest/contributor/", "describedby",
                  type="text/html"),
        ],
        "media_types": {
            "base": "application/json",
            "type": "application/vnd.openstack.ironic.v1+json",
        },
        "version": _version_object(base),
    }  # fmt: skip
    for name, since in _RESOURCES:
        if version >= since:
            doc[name] = [_link(f"{base}/v1/{name}/", "self"), _link(f"{base}/{name}/", "bookmark")]
    return doc
