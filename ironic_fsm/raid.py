"""Target RAID configurations: what one may hold, checked as Ironic checks them (1.12).

A configuration is ``{"logical_disks": [...]}``; each logical disk needs a
``raid_level`` and a ``size_gb`` (gigabytes, or ``"MAX"``: what is left)
and may say more (:data:`LOGICAL_DISK_PROPERTIES`, Ironic's names). An
empty configuration (``{}``) means none. RAID interfaces check a target
with :func:`check_raid_config` unless they have a schema of their own.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Final

from ironic_fsm.exceptions import InvalidParameterValue

__all__ = ["LOGICAL_DISK_PROPERTIES", "RAID_LEVELS", "check_raid_config"]

#: The RAID levels Ironic knows, in its order.
RAID_LEVELS: Final = ("0", "1", "2", "5", "6", "1+0", "5+0", "6+0", "JBOD")

#: Each logical disk property: (its JSON schema, what it means, whether it is required).
_PROPERTIES: Final[dict[str, tuple[dict[str, Any], str, bool]]] = {
    "raid_level": ({"type": "string", "enum": list(RAID_LEVELS)},
                   f"The RAID level of the disk: one of {', '.join(RAID_LEVELS)}.", True),
    "size_gb": ({"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string",
                                                               "enum": ["MAX"]}]},
                "Its size in GiB, or 'MAX' for all the space left.", True),
    "volume_name": ({"type": "string"}, "The name the volume is given, where supported.", False),
    "is_root_volume": ({"type": "boolean"},
                       "true: the node's root volume (at most one disk says so).", False),
    "share_physical_disks": ({"type": "boolean"},
                             "true: it may share physical disks with other logical disks.",
                             False),
    "disk_type": ({"type": "string", "enum": ["hdd", "ssd"]},
                  "Which physical disks to use: 'hdd' or 'ssd'.", False),
    "interface_type": ({"type": "string", "enum": ["sata", "scsi", "sas"]},
                       "Which disk interface to use: 'sata', 'scsi' or 'sas'.", False),
    "number_of_physical_disks": ({"type": "integer", "minimum": 1},
                                 "How many physical disks to build it on.", False),
    "controller": ({"type": "string"}, "The RAID controller to build it on.", False),
    "physical_disks": ({"type": "array", "items": {"type": ["string", "object"]}},
                       "The physical disks to build it on, as the driver names them.", False),
}  # fmt: skip

#: What each logical disk property means (``GET /v1/drivers/{d}/raid/logical_disk_properties``).
LOGICAL_DISK_PROPERTIES: Final = {
    name: f"{text} {'Required.' if required else 'Optional.'}"
    for name, (_, text, required) in sorted(_PROPERTIES.items())
}

_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "logical_disks": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {name: schema for name, (schema, _, _) in _PROPERTIES.items()},
                "required": [name for name, (_, _, required) in _PROPERTIES.items() if required],
                "additionalProperties": False,
            },
        }
    },
    "required": ["logical_disks"],
    "additionalProperties": False,
}


@functools.cache
def _checker() -> Any:
    """The schema compiled on first use: ``import ironic_fsm`` stays free of fastjsonschema."""
    import fastjsonschema

    return fastjsonschema.compile(_SCHEMA)


def check_raid_config(config: Mapping[str, Any], node: str) -> None:
    """Refuse a target RAID configuration Ironic would refuse (Ironic's opening words)."""
    import fastjsonschema

    try:
        _checker()(dict(config))
    except fastjsonschema.JsonSchemaValueException as error:
        raise InvalidParameterValue(
            f"RAID config validation error: {error.message}", node=node
        ) from None
    roots = [d for d in config["logical_disks"] if d.get("is_root_volume")]
    if len(roots) > 1:
        raise InvalidParameterValue(
            "RAID config validation error: Raid config cannot have more than one root volume",
            node=node,
        )
