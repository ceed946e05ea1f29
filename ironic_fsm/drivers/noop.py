"""Ironic's do-nothing implementations by name, for the entry points (``no-raid``, ``noop``...).

The classes are :func:`ironic_fsm.interfaces.no_op_class`'s, the ones a
hardware type gets for a kind it leaves out: choosing ``raid_interface:
no-raid`` gives a node exactly that. Using one for real work raises
:class:`~ironic_fsm.exceptions.UnsupportedDriverExtension`.
"""

from __future__ import annotations

from ironic_fsm.interfaces import no_op_class

__all__ = [
    "NoBIOS",
    "NoConsole",
    "NoFirmware",
    "NoInspect",
    "NoRAID",
    "NoRescue",
    "NoVendor",
    "NoopNetwork",
    "NoopStorage",
]

NoBIOS = no_op_class("bios")
NoConsole = no_op_class("console")
NoFirmware = no_op_class("firmware")
NoInspect = no_op_class("inspect")
NoRAID = no_op_class("raid")
NoRescue = no_op_class("rescue")
NoVendor = no_op_class("vendor")
NoopNetwork = no_op_class("network")
NoopStorage = no_op_class("storage")
