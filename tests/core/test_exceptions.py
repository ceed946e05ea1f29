"""ironic_fsm.exceptions: one root, messages first, details as attributes (docs/errors.rst)."""

from __future__ import annotations

import pytest

from ironic_fsm import exceptions
from ironic_fsm.exceptions import (
    BMCAuthError,
    BMCRequestFailed,
    BMCTimeout,
    BMCUnreachable,
    HardwareError,
    InvalidState,
    InvalidStateRequested,
    IronicFSMError,
    NodeLocked,
    StepsNotAvailable,
)

CONTRACT = [
    "InvalidState",
    "InvalidStateRequested",
    "InvalidParameterValue",
    "NodeNotFound",
    "NodeLocked",
    "NodeInMaintenance",
    "NodeIsRetired",
    "NodeProtected",
    "ConcurrentUpdate",
    "StepNotAllowed",
    "StepsNotAvailable",
    "TransitionRejected",
    "DriverNotFound",
    "MissingDependency",
    "HardwareError",
]
ALL = sorted(exceptions.__all__)


@pytest.mark.parametrize("name", CONTRACT)
def test_contract_exception_exists(name: str) -> None:
    assert name in exceptions.__all__
    cls = getattr(exceptions, name)
    assert issubclass(cls, IronicFSMError)


def test_root_is_an_exception() -> None:
    assert issubclass(IronicFSMError, Exception)
    assert "IronicFSMError" in exceptions.__all__


@pytest.mark.parametrize("name", ALL)
def test_message_is_first_positional_argument(name: str) -> None:
    cls = getattr(exceptions, name)
    err = cls(f"something about node n-1 went wrong ({name})")
    assert str(err) == f"something about node n-1 went wrong ({name})"
    assert err.message == str(err)
    assert isinstance(err, IronicFSMError)
    with pytest.raises(cls, match="n-1"):
        raise err


@pytest.mark.parametrize("name", ALL)
def test_keyword_details_become_attributes(name: str) -> None:
    cls = getattr(exceptions, name)
    err = cls("msg", node="n-1", state="active", verb="provide", step={"step": "x"})
    assert err.node == "n-1"
    assert err.state == "active"
    assert err.verb == "provide"
    assert err.step == {"step": "x"}
    assert err.details["node"] == "n-1"
    assert str(err) == "msg"


def test_node_locked_is_retryable() -> None:
    err = NodeLocked("Node n-1 is locked by host-a:123", node="n-1", holder="host-a:123")
    assert err.retryable is True
    assert NodeLocked.retryable is True
    assert err.holder == "host-a:123"
    assert "host-a:123" in str(err)


def test_most_errors_are_not_retryable() -> None:
    assert IronicFSMError("x").retryable is False
    assert InvalidState("x").retryable is False
    assert exceptions.InvalidParameterValue("x").retryable is False


def test_steps_not_available_retry_after() -> None:
    assert StepsNotAvailable(retry_after=5).retry_after == 5
    assert StepsNotAvailable("agent not up yet", retry_after=30).retry_after == 30
    assert StepsNotAvailable("agent not up yet").retry_after == -1
    assert str(StepsNotAvailable("agent not up yet", retry_after=3)) == "agent not up yet"
    assert str(StepsNotAvailable(retry_after=5))  # a default message, not empty


def test_invalid_state_requested_is_an_invalid_state() -> None:
    assert issubclass(InvalidStateRequested, InvalidState)
    with pytest.raises(InvalidState):
        raise InvalidStateRequested("The requested action 'deploy' ...", verb="deploy")


def test_step_not_allowed_is_invalid_parameter_value() -> None:
    assert issubclass(exceptions.StepNotAllowed, exceptions.InvalidParameterValue)


@pytest.mark.parametrize(
    ("cls", "std"),
    [
        (BMCUnreachable, ConnectionError),
        (BMCAuthError, PermissionError),
        (BMCTimeout, TimeoutError),
    ],
)
def test_hardware_errors_are_catchable_as_stdlib(cls: type[HardwareError], std: type) -> None:
    assert issubclass(cls, HardwareError)
    with pytest.raises(std) as info:
        raise cls("BMC 10.0.0.1 said no", node="n-1")
    assert str(info.value) == "BMC 10.0.0.1 said no"
    assert info.value.node == "n-1"
    with pytest.raises(HardwareError):
        raise cls("again")


def test_hardware_error_subclasses_are_distinct() -> None:
    subclasses = [BMCUnreachable, BMCAuthError, BMCTimeout, BMCRequestFailed]
    assert len(set(subclasses)) == 4
    for a in subclasses:
        for b in subclasses:
            if a is not b:
                assert not issubclass(a, b)
    assert not issubclass(BMCUnreachable, (PermissionError, TimeoutError))
    assert not issubclass(BMCAuthError, (ConnectionError, TimeoutError))
    assert not issubclass(BMCTimeout, (ConnectionError, PermissionError))
    caught: list[str] = []
    for err in (BMCTimeout("slow"), BMCAuthError("denied"), BMCUnreachable("gone")):
        try:
            raise err
        except ConnectionError:
            caught.append("connection")
        except PermissionError:
            caught.append("permission")
        except TimeoutError:
            caught.append("timeout")
    assert caught == ["timeout", "permission", "connection"]


@pytest.mark.parametrize(
    ("name", "std"),
    [
        ("InvalidParameterValue", ValueError),
        ("NodeNotFound", LookupError),
        ("DriverNotFound", LookupError),
        ("MissingDependency", ImportError),
        ("UnsupportedOperation", NotImplementedError),
    ],
)
def test_stdlib_bases(name: str, std: type) -> None:
    assert issubclass(getattr(exceptions, name), std)


def test_docstring_draws_the_tree() -> None:
    doc = exceptions.__doc__ or ""
    for name in exceptions.__all__:
        assert name in doc, name
    assert "IronicFSMError" in doc.split("\n\n", 1)[1]


def test_all_lists_every_exception_class() -> None:
    classes = {
        name
        for name, value in vars(exceptions).items()
        if isinstance(value, type) and issubclass(value, BaseException)
        and value.__module__ == exceptions.__name__
    }  # fmt: skip
    assert classes == set(exceptions.__all__)
    assert list(exceptions.__all__) == sorted(exceptions.__all__)
