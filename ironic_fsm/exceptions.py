"""Every error ironic_fsm raises, under one root.

Each exception takes its message as the first positional argument and keeps
the things it is about (node, state, event, verb, step, ...) as attributes,
so that callers can react without parsing text. Where a standard exception
describes the same situation, ours also derives from it, so ``except
ValueError`` or ``except TimeoutError`` keep working.

The tree::

    IronicFSMError
    ├── InvalidDefinition (ValueError)       a lifecycle or step declared wrongly
    ├── InvalidParameterValue (ValueError)   bad input: fields, steps, driver_info
    │   ├── StepNotAllowed                   a step the operator disallowed
    │   ├── InterfaceNotFound (+DriverNotFound)      no enabled implementation of that name
    │   └── IncompatibleInterface (+DriverNotFound)  the hardware type does not support it
    ├── InvalidState                         no such transition in the lifecycle
    │   └── InvalidStateRequested            a verb the node's state does not accept
    ├── TransitionRejected                   a guard vetoed a transition
    ├── NodeNotFound (LookupError)
    ├── ResourceNotFound (LookupError)       no port, chassis, allocation... of that id
    ├── ResourceExists                       its address, name or uuid is another's
    ├── NodeLocked                           reserved by another holder; retryable
    ├── ConcurrentUpdate                     stale record version; retryable
    ├── NodeInMaintenance
    ├── NodeIsRetired
    ├── NodeProtected
    ├── StepsNotAvailable                    steps known later; see retry_after
    ├── StepFailed                           a step raised or returned garbage
    ├── DriverNotFound (LookupError)         unknown hardware type or interface
    ├── MissingDependency (ImportError)      an extra is not installed
    ├── UnsupportedOperation (NotImplementedError)
    │   ├── StoreUnsupported                 the store keeps no such records (ports...)
    │   └── UnsupportedDriverExtension       the node's implementation is a no-op one
    ├── StoreError                           the database failed the request
    │   ├── StoreBusy                        another writer holds the lock; retryable
    │   └── StoreUnavailable                 database down, cut off or disk full; retryable
    └── HardwareError                        the BMC could not do what we asked
        ├── BMCUnreachable (ConnectionError)
        ├── BMCAuthError (PermissionError)
        ├── BMCTimeout (TimeoutError)
        ├── BMCRequestFailed                 the BMC answered with an error
        ├── DriverError                      a driver's own code raised something else
        └── AgentError                       the ramdisk agent could not do what we asked
            ├── AgentUnreachable (ConnectionError)
            ├── AgentTimeout (TimeoutError)  no answer within the call's deadline
            ├── AgentTokenRejected (PermissionError)
            ├── AgentBusy                    running another command; retryable
            └── AgentCommandFailed           the agent answered with an error
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AgentBusy",
    "AgentCommandFailed",
    "AgentError",
    "AgentTimeout",
    "AgentTokenRejected",
    "AgentUnreachable",
    "BMCAuthError",
    "BMCRequestFailed",
    "BMCTimeout",
    "BMCUnreachable",
    "ConcurrentUpdate",
    "DriverError",
    "DriverNotFound",
    "HardwareError",
    "IncompatibleInterface",
    "InterfaceNotFound",
    "InvalidDefinition",
    "InvalidParameterValue",
    "InvalidState",
    "InvalidStateRequested",
    "IronicFSMError",
    "MissingDependency",
    "NodeInMaintenance",
    "NodeIsRetired",
    "NodeLocked",
    "NodeNotFound",
    "NodeProtected",
    "ResourceExists",
    "ResourceNotFound",
    "StepFailed",
    "StepNotAllowed",
    "StepsNotAvailable",
    "StoreBusy",
    "StoreError",
    "StoreUnavailable",
    "StoreUnsupported",
    "TransitionRejected",
    "UnsupportedDriverExtension",
    "UnsupportedOperation",
]


class IronicFSMError(Exception):
    """Root of every ironic_fsm error.

    Args:
        message: The human-readable text; it names what went wrong and where.
        **details: Structured attributes (``node``, ``state``, ``event``,
            ``verb``, ``step``, ...), set on the instance and kept in
            :attr:`details`.
    """

    #: True when the same call may succeed if simply tried again later.
    retryable: bool = False

    def __init__(self, message: str, /, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details
        for key, value in details.items():
            setattr(self, key, value)

    def __str__(self) -> str:
        return self.message


class InvalidDefinition(IronicFSMError, ValueError):
    """A lifecycle, step or hardware type is declared wrongly (definition time)."""


class InvalidParameterValue(IronicFSMError, ValueError):
    """An argument, field, step list or ``driver_info`` is not acceptable."""


class StepNotAllowed(InvalidParameterValue):
    """A requested step is on the operator's disallow list."""


class InvalidState(IronicFSMError):
    """The lifecycle has no transition for this state and event."""


class InvalidStateRequested(InvalidState):
    """A user verb is not accepted in the node's current state; nothing changed."""


class TransitionRejected(IronicFSMError):
    """A guard vetoed the transition; ``reason`` says why."""


class NodeNotFound(IronicFSMError, LookupError):
    """No node has this UUID or name."""


class NodeLocked(IronicFSMError):
    """Another holder has reserved the node; try again later."""

    retryable = True


class ConcurrentUpdate(IronicFSMError):
    """The record changed since it was read (stale ``version``); re-read and retry."""

    retryable = True


class NodeInMaintenance(IronicFSMError):
    """The action is refused while the node is in maintenance."""


class NodeIsRetired(IronicFSMError):
    """The action is refused because the node is retired."""


class NodeProtected(IronicFSMError):
    """The action would destroy a protected node's instance."""


class StepsNotAvailable(IronicFSMError):
    """An interface learns its steps asynchronously and does not know them yet.

    ``retry_after`` is the number of seconds after which asking again makes
    sense, or -1 when unknown.
    """

    retryable = True

    def __init__(
        self,
        message: str = "Steps are not available yet; ask again later",
        /,
        *,
        retry_after: float = -1,
        **details: Any,
    ) -> None:
        super().__init__(message, retry_after=retry_after, **details)
        self.retry_after = retry_after


class StepFailed(IronicFSMError):
    """A step raised, or returned something other than ``None`` or its wait state."""


class DriverNotFound(IronicFSMError, LookupError):
    """No hardware type or interface of that name is registered or installed."""


class MissingDependency(IronicFSMError, ImportError):
    """A plugin needs an optional extra that is not installed."""


class UnsupportedOperation(IronicFSMError, NotImplementedError):
    """The interface does not implement this operation."""


class StoreUnsupported(UnsupportedOperation):
    """The store has no place for this kind of record (it declares none: see
    :class:`~ironic_fsm.stores.capabilities.StoreCapabilities`)."""


class ResourceNotFound(IronicFSMError, LookupError):
    """No port, port group, chassis, allocation or volume record has this UUID or name."""


class ResourceExists(IronicFSMError):
    """Another record of the kind has this UUID, name or address (a port's MAC...)."""


class UnsupportedDriverExtension(UnsupportedOperation):
    """The node's implementation of an interface kind is a no-op one (``no-raid``...).

    Ironic's error of the same name: the kind is disabled for the node, so
    nothing of it can run until another implementation is chosen.
    """


class InterfaceNotFound(InvalidParameterValue, DriverNotFound):
    """No enabled implementation of that name exists for the interface kind.

    ``kind``, ``name`` and ``valid`` (the enabled names) are in the details.
    """


class IncompatibleInterface(InvalidParameterValue, DriverNotFound):
    """The hardware type does not support that implementation of the interface kind."""


class StoreError(IronicFSMError):
    """The store could not carry out the request; nothing it was asked to write was kept.

    Raised in place of the database driver's own exceptions, so that callers
    (and the CLI) handle one family; the original is chained as ``__cause__``.
    """


class StoreBusy(StoreError):
    """Another writer held the database lock for longer than the busy timeout."""

    retryable = True


class StoreUnavailable(StoreError):
    """The database could not be reached or could not write at all; retryable.

    A connection refused or cut (a PostgreSQL restart), no pooled connection
    to be had, a disk that is full or failing under SQLite. Nothing about the
    request was wrong: the same call may succeed once the database is back.
    A conductor retries it during a flow (``Config.store_retry_timeout``)
    and never fails a node for it. ``target`` names the database, its
    password masked.
    """

    retryable = True


class HardwareError(IronicFSMError):
    """The BMC could not be reached or did not do what was asked."""


class BMCUnreachable(HardwareError, ConnectionError):
    """Nothing answers at the BMC's address (refused, unroutable, no reply at login)."""


class BMCAuthError(HardwareError, PermissionError):
    """The BMC refused the credentials."""


class BMCTimeout(HardwareError, TimeoutError):
    """The BMC stopped answering within the configured deadline."""


class BMCRequestFailed(HardwareError):
    """The BMC answered, with an error (completion code, HTTP status)."""


class DriverError(HardwareError):
    """An interface raised an exception that is not an ironic_fsm error.

    Third-party drivers may raise anything; the conductor wraps it in this
    type, with secrets scrubbed from the message, and chains the original.
    ``interface`` and ``method`` name where it came from.
    """


class AgentError(HardwareError):
    """The ramdisk agent (Ironic Python Agent) could not do what the conductor asked.

    ``node`` names the node; ``command`` the agent command (``clean.get_clean_steps``).
    The agent token is never part of the message.
    """


class AgentUnreachable(AgentError, ConnectionError):
    """Nothing answers at the agent's callback URL (refused, unroutable, reset)."""


class AgentTimeout(AgentError, TimeoutError):
    """The agent did not answer within the call's deadline."""


class AgentTokenRejected(AgentError, PermissionError):
    """The agent refused the token (HTTP 401): it was booted for another token or none."""


class AgentBusy(AgentError):
    """The agent is running another command (HTTP 409); try again after it ends."""

    retryable = True


class AgentCommandFailed(AgentError):
    """The agent answered with an error: a status it should not send, or a failed command."""
