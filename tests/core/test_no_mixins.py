"""No mixin bases in the conductor or the stores: parts are held and called, not inherited.

Every class of ``ironic_fsm.conductor.*`` and ``ironic_fsm.stores.*`` may
name as bases only ``object``, protocols (which declare, and are satisfied
by, methods), exceptions (the exception tree), tuples (``NamedTuple``),
``typing.Generic`` (a type parameter),
attrs records extending attrs records, or one of the few listed below with
the reason it is allowed. A class that gets behaviour from another of ours
spreads one namespace over files, which is what issue 18 took apart.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import typing
from types import ModuleType

import attrs
import pytest

import ironic_fsm.conductor
import ironic_fsm.stores
from ironic_fsm.stores import MemoryStore, SQLStore

#: Bases allowed by name, each with why: "module.Class" -> the allowed "module.Base".
ALLOWED: dict[str, tuple[str, str]] = {
    # A plain dict of a node's fields whose repr masks secrets: a container, no parts.
    "ironic_fsm.stores._query.NodeFields": ("builtins.dict", "a dict with a masked repr"),
    # The base applications subclass to put the Store protocol on their key-value
    # database: they write four abstract methods and get nine (a template, not a mixin).
    "ironic_fsm.stores.kv.KeyValueStore": ("abc.ABC", "abstract base offered to applications"),
}


def _modules(package: ModuleType) -> list[ModuleType]:
    names = [package.__name__]
    names += [f"{package.__name__}.{m.name}" for m in pkgutil.iter_modules(package.__path__)]
    return [importlib.import_module(name) for name in names]


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _allowed(cls: type, base: type) -> bool:
    if base is object or getattr(base, "_is_protocol", False):
        return True
    if issubclass(cls, BaseException) and issubclass(base, BaseException):
        return True
    if base is tuple:  # a NamedTuple
        return True
    if base is typing.Generic:  # a type parameter: no behaviour comes with it
        return True
    if attrs.has(cls) and attrs.has(base):  # a record extending a record
        return True
    allowed = ALLOWED.get(_name(cls))
    return allowed is not None and allowed[0] == _name(base)


def mixin_bases(modules: list[ModuleType]) -> list[str]:
    """``"Class <- Base"`` for every base not allowed, of the classes these modules define."""
    found = []
    for module in modules:
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__:
                continue  # imported, checked where it is defined
            found += [
                f"{_name(cls)} <- {_name(base)}"
                for base in cls.__bases__
                if not _allowed(cls, base)
            ]
    return found


@pytest.mark.parametrize("package", [ironic_fsm.conductor, ironic_fsm.stores])
def test_no_class_inherits_behaviour_from_another(package: ModuleType) -> None:
    assert mixin_bases(_modules(package)) == []


def test_the_check_finds_a_mixin() -> None:
    """A made-up module with a mixin, and one with only what is allowed."""
    module = ModuleType("made_up")

    class Scans:
        def reserved(self) -> list[str]:
            return []

    class Store(Scans):
        pass

    class Error(LookupError):
        pass

    class Listing(dict[str, int]):
        pass

    for cls in (Scans, Store, Error, Listing):
        cls.__module__ = "made_up"
        setattr(module, cls.__name__, cls)
    assert mixin_bases([module]) == [
        f"made_up.{Listing.__qualname__} <- builtins.dict",  # not on the list
        f"made_up.{Store.__qualname__} <- made_up.{Scans.__qualname__}",
    ]


def test_the_built_in_stores_are_facades() -> None:
    """Their MRO is themselves and ``object``: every part is an attribute, not a base."""
    assert MemoryStore.__mro__ == (MemoryStore, object)
    assert SQLStore.__mro__ == (SQLStore, object)
    assert ironic_fsm.conductor.Conductor.__mro__ == (ironic_fsm.conductor.Conductor, object)
