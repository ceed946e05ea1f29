"""Deploy templates and runbooks as stores keep them: the catalog of named step lists.

Both kinds are the same shape to a store (a UUID, a unique name, JSON
settings, timestamps), so one small protocol serves both, by kind. The
SQL store keeps them in schema 8's ``deploy_templates`` and ``runbooks``
tables; :class:`MemoryCatalog` keeps them in dicts, for the memory store
and for any store that has no catalog of its own. What a name or a step
may be is the conductor's rule, not the store's.
"""

from __future__ import annotations

import builtins
import threading
from datetime import datetime, timezone
from typing import Any, Final, Literal, Protocol, runtime_checkable

import attrs
import orjson

from ironic_fsm.exceptions import InvalidParameterValue, IronicFSMError

__all__ = [
    "CATALOG_KINDS",
    "CatalogEntry",
    "CatalogEntryExists",
    "CatalogEntryNotFound",
    "CatalogKind",
    "CatalogStore",
    "MemoryCatalog",
]

CatalogKind = Literal["deploy_templates", "runbooks"]
CATALOG_KINDS: Final[tuple[CatalogKind, ...]] = ("deploy_templates", "runbooks")
_WORDS: Final = {"deploy_templates": "Deploy template", "runbooks": "Runbook"}
_UTC: Final = timezone.utc


class CatalogEntryNotFound(IronicFSMError, LookupError):
    """No deploy template or runbook has this UUID or name."""


class CatalogEntryExists(IronicFSMError):
    """Another deploy template (or runbook) has this name or UUID."""


@attrs.define
class CatalogEntry:
    """One deploy template or runbook; ``public``, ``owner``, ``disable_ramdisk``,
    ``description`` and ``traits`` are a runbook's (a template keeps their defaults)."""

    uuid: str
    name: str
    steps: list[dict[str, Any]]
    extra: dict[str, Any] = attrs.field(factory=dict)
    public: bool = False
    owner: str | None = None
    disable_ramdisk: bool = False
    created_at: datetime | None = None
    updated_at: datetime | None = None
    #: A runbook's words about itself and the traits a node needs to run it (Ironic 1.112;
    #: no traits: the runbook's name is the trait, as before).
    description: str | None = None
    traits: list[str] = attrs.field(factory=list)

    def settings(self) -> bytes:
        """What the ``data`` column holds: everything but the identity and the times."""
        return orjson.dumps(
            {
                "steps": self.steps,
                "extra": self.extra,
                "public": self.public,
                "owner": self.owner,
                "disable_ramdisk": self.disable_ramdisk,
                "description": self.description,
                "traits": self.traits,
            }
        )

    @classmethod
    def from_settings(
        cls, uuid: str, name: str, data: str | bytes, created: datetime, updated: datetime | None
    ) -> CatalogEntry:
        return cls(uuid, name, created_at=created, updated_at=updated, **orjson.loads(data))

    def copy(self) -> CatalogEntry:
        """A copy sharing nothing with this one (stores never hand out what they keep)."""
        fresh = orjson.loads(self.settings())
        return CatalogEntry(
            self.uuid, self.name, created_at=self.created_at, updated_at=self.updated_at, **fresh
        )


def not_found(kind: CatalogKind, ident: str) -> CatalogEntryNotFound:
    return CatalogEntryNotFound(f"{_WORDS[kind]} {ident} could not be found", ident=ident)


def exists(kind: CatalogKind, entry: CatalogEntry, other: str) -> CatalogEntryExists:
    return CatalogEntryExists(
        f"{_WORDS[kind]} {entry.name!r} cannot be stored: {other} has its name or UUID",
        ident=entry.uuid,
    )


@runtime_checkable
class CatalogStore(Protocol):
    """A store that keeps deploy templates and runbooks (both built-in stores do)."""

    def add_entry(self, kind: CatalogKind, entry: CatalogEntry) -> CatalogEntry: ...
    def get_entry(self, kind: CatalogKind, ident: str) -> CatalogEntry: ...
    def list_entries(self, kind: CatalogKind) -> builtins.list[CatalogEntry]: ...
    def replace_entry(self, kind: CatalogKind, entry: CatalogEntry) -> CatalogEntry: ...
    def delete_entry(self, kind: CatalogKind, ident: str) -> None: ...


def _now() -> datetime:
    return datetime.now(_UTC)


class MemoryCatalog:
    """The catalog in dicts, in creation order; copies in and out, under a lock."""

    def __init__(self) -> None:
        self._catalog: dict[str, dict[str, CatalogEntry]] = {kind: {} for kind in CATALOG_KINDS}
        self._catalog_lock = threading.Lock()

    def _find(self, kind: CatalogKind, ident: str) -> CatalogEntry | None:
        entries = self._catalog[kind]
        found = entries.get(ident)
        return found or next((e for e in entries.values() if e.name == ident), None)

    def _existing(self, kind: CatalogKind, ident: str) -> CatalogEntry:
        """The entry with this UUID or name; the kind's not-found error if none."""
        found = self._find(kind, ident)
        if found is None:
            raise not_found(kind, ident)
        return found

    def add_entry(self, kind: CatalogKind, entry: CatalogEntry) -> CatalogEntry:
        with self._catalog_lock:
            for ident in (entry.uuid, entry.name):
                if (other := self._find(kind, ident)) is not None:
                    raise exists(kind, entry, other.uuid)
            kept = attrs.evolve(entry.copy(), created_at=_now(), updated_at=None)
            self._catalog[kind][entry.uuid] = kept
            return kept.copy()

    def get_entry(self, kind: CatalogKind, ident: str) -> CatalogEntry:
        with self._catalog_lock:
            return self._existing(kind, ident).copy()

    def list_entries(self, kind: CatalogKind) -> builtins.list[CatalogEntry]:
        with self._catalog_lock:
            return [entry.copy() for entry in self._catalog[kind].values()]

    def replace_entry(self, kind: CatalogKind, entry: CatalogEntry) -> CatalogEntry:
        with self._catalog_lock:
            old = self._catalog[kind].get(entry.uuid)
            if old is None:
                raise not_found(kind, entry.uuid)
            other = self._find(kind, entry.name)
            if other is not None and other.uuid != entry.uuid:
                raise exists(kind, entry, other.uuid)
            kept = attrs.evolve(entry.copy(), created_at=old.created_at, updated_at=_now())
            self._catalog[kind][entry.uuid] = kept
            return kept.copy()

    def delete_entry(self, kind: CatalogKind, ident: str) -> None:
        with self._catalog_lock:
            del self._catalog[kind][self._existing(kind, ident).uuid]


def _check_text(kind: CatalogKind, entry: CatalogEntry) -> None:
    """Refuse what the columns cannot hold, before anything is written."""
    if len(entry.uuid) > 36 or len(entry.name) > 255 or "\x00" in entry.uuid + entry.name:
        raise InvalidParameterValue(
            f"{_WORDS[kind]} {entry.name[:255]!r} cannot be stored: a UUID of at most 36 "
            "and a name of at most 255 characters, without NUL, fit",
            ident=entry.uuid,
        )
