"""ironic_fsm: OpenStack Ironic's bare-metal node lifecycle as a library.

The public surface is what this module exports: the lifecycle
(:data:`LIFECYCLE`), the node record (:class:`Node`), the conductor that
drives nodes through it (:class:`Conductor`, :class:`Config`), hardware
types and the step decorators, and the modules :mod:`~ironic_fsm.states`,
:mod:`~ironic_fsm.interfaces`, :mod:`~ironic_fsm.exceptions` and
:mod:`~ironic_fsm.stores`. Everything else is internal.
"""

from __future__ import annotations

import logging

from ironic_fsm import exceptions as exceptions
from ironic_fsm import interfaces as interfaces
from ironic_fsm import states as states
from ironic_fsm import stores as stores
from ironic_fsm.conductor import Conductor as Conductor
from ironic_fsm.conductor.fleet import ConductorInfo as ConductorInfo
from ironic_fsm.conductor.power_sync import PowerSyncReport as PowerSyncReport
from ironic_fsm.config import Config as Config
from ironic_fsm.events import Event as Event
from ironic_fsm.hardware import HardwareType as HardwareType
from ironic_fsm.history import HistoryEntry as HistoryEntry
from ironic_fsm.machine import LIFECYCLE as LIFECYCLE
from ironic_fsm.machine import Lifecycle as Lifecycle
from ironic_fsm.node import Node as Node
from ironic_fsm.steps import clean_step as clean_step
from ironic_fsm.steps import deploy_step as deploy_step
from ironic_fsm.steps import service_step as service_step
from ironic_fsm.steps import verify_step as verify_step
from ironic_fsm.task import Task as Task

__version__ = "0.1.0"

__all__ = [
    "Conductor",
    "ConductorInfo",
    "Config",
    "Event",
    "HardwareType",
    "HistoryEntry",
    "LIFECYCLE",
    "Lifecycle",
    "Node",
    "PowerSyncReport",
    "Task",
    "clean_step",
    "deploy_step",
    "exceptions",
    "interfaces",
    "service_step",
    "states",
    "stores",
    "verify_step",
]

# A library never configures logging; applications do.
logging.getLogger(__name__).addHandler(logging.NullHandler())
