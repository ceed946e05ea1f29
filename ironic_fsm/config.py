"""Conductor configuration, with Ironic's option names and defaults."""

from __future__ import annotations

import socket
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from ironic_fsm.exceptions import InvalidParameterValue

__all__ = ["Config"]


def _step_ids(value: Any) -> tuple[str, ...]:
    if (
        isinstance(value, (str, bytes))
        or not isinstance(value, Iterable)
        or not all(isinstance(v, str) and "." in v for v in value)
    ):
        raise InvalidParameterValue(
            f"Expected a list of 'interface.step' names, got {value!r}", value=value
        )
    return tuple(value)


def _overrides(value: Mapping[str, Any]) -> Mapping[str, int]:
    if not isinstance(value, Mapping):
        raise InvalidParameterValue(
            f"Priority overrides must be a mapping of 'interface.step' to priority, not {value!r}",
            value=value,
        )
    out: dict[str, int] = {}
    for key, prio in value.items():
        if not isinstance(key, str) or "." not in key:
            raise InvalidParameterValue(
                f"Priority override key {key!r} is not 'interface.step'", value=key
            )
        if isinstance(prio, bool) or not isinstance(prio, (int, str)):
            raise InvalidParameterValue(
                f"Priority override for {key} must be an integer >= 0, not {prio!r}", value=prio
            )
        try:
            number = int(prio)
        except ValueError:
            number = -1
        if number < 0:
            raise InvalidParameterValue(
                f"Priority override for {key} must be an integer >= 0, not {prio!r}", value=prio
            )
        out[key] = number
    return out


def _non_negative(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise InvalidParameterValue(
            f"Config.{attribute.name} must be a number of seconds >= 0, not {value!r}",
            option=attribute.name,
        )


def _boolean(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, bool):
        raise InvalidParameterValue(
            f"Config.{attribute.name} must be True or False, not {value!r}", option=attribute.name
        )


_DISALLOWED_BY_DEFAULT = ("vendor.send_raw",)


@attrs.frozen(init=False, kw_only=True)
class Config:
    """Operator settings for a :class:`~ironic_fsm.Conductor`.

    Every option keeps Ironic's name and default. ``clean_nodes``, the old
    name of ``automated_clean``, is still accepted, with a
    :class:`DeprecationWarning`.
    """

    automated_clean: bool = attrs.field(default=True, validator=_boolean)
    clean_step_priority_override: Mapping[str, int] = attrs.field(
        factory=dict, converter=_overrides
    )
    verify_step_priority_override: Mapping[str, int] = attrs.field(
        factory=dict, converter=_overrides
    )
    disallow_clean_steps: tuple[str, ...] = attrs.field(
        default=_DISALLOWED_BY_DEFAULT, converter=_step_ids
    )
    disallow_deploy_steps: tuple[str, ...] = attrs.field(
        default=_DISALLOWED_BY_DEFAULT, converter=_step_ids
    )
    disallow_service_steps: tuple[str, ...] = attrs.field(
        default=_DISALLOWED_BY_DEFAULT, converter=_step_ids
    )
    clean_callback_timeout: float = attrs.field(default=1800, validator=_non_negative)
    deploy_callback_timeout: float = attrs.field(default=1800, validator=_non_negative)
    service_callback_timeout: float = attrs.field(default=1800, validator=_non_negative)
    rescue_callback_timeout: float = attrs.field(default=1800, validator=_non_negative)
    inspect_wait_timeout: float = attrs.field(default=1800, validator=_non_negative)
    poweroff_in_cleanfail: bool = attrs.field(default=False, validator=_boolean)
    poweroff_in_servicefail: bool = attrs.field(default=False, validator=_boolean)
    allow_provisioning_in_maintenance: bool = attrs.field(default=True, validator=_boolean)
    allow_deleting_available_nodes: bool = attrs.field(default=True, validator=_boolean)
    #: Seconds after which a reservation whose holder stopped heartbeating is taken over.
    heartbeat_timeout: float = attrs.field(default=60, validator=_non_negative)
    #: This conductor's name in reservations.
    host: str = attrs.field(factory=socket.gethostname)

    def __init__(self, **options: Any) -> None:
        if "clean_nodes" in options:
            warnings.warn(
                "Config(clean_nodes=...) is deprecated; use automated_clean",
                DeprecationWarning,
                stacklevel=2,
            )
            legacy = options.pop("clean_nodes")
            options.setdefault("automated_clean", legacy)
        unknown = set(options) - {a.name for a in attrs.fields(type(self))}
        if unknown:
            raise InvalidParameterValue(
                f"Unknown Config option(s): {', '.join(sorted(unknown))}", options=sorted(unknown)
            )
        self.__attrs_init__(**options)

    @property
    def clean_nodes(self) -> bool:
        """Deprecated alias of :attr:`automated_clean`."""
        warnings.warn(
            "Config.clean_nodes is deprecated; use automated_clean",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.automated_clean
