"""A config drive built from its JSON form, as Ironic builds one from API 1.56 on.

A deploy request may carry the config drive as an object (``meta_data``,
``network_data``, ``user_data``, ``vendor_data``) rather than a finished
image. The conductor keeps the object in ``instance_info`` and the image is
made when the agent is about to write it: an ISO 9660 volume labelled
``config-2`` with Rock Ridge and Joliet names (what cloud-init and Ignition
look for), holding ``openstack/<version>/meta_data.json``,
``network_data.json``, ``vendor_data2.json`` and ``user_data`` for the
versions ``2012-08-10`` and ``latest``, gzipped and base64-encoded, the
form IPA takes. ``meta_data`` gets the node's ``uuid`` and ``name`` unless
it has them.

pycdlib (pure Python, the ``agent`` extra) writes the volume, so building
needs no ``genisoimage`` on the conductor's machine.
"""

from __future__ import annotations

import base64
import gzip
import io
import json
from collections.abc import Mapping
from typing import Any, Final

#: The metadata versions a config drive carries (openstacksdk's and Ironic's choice).
VERSIONS: Final = ("2012-08-10", "latest")
#: Each file: its name on the drive, and the 8.3 ISO 9660 name beneath the long ones.
_FILES: Final = (
    ("meta_data.json", "META.JSN"),
    ("network_data.json", "NETWORK.JSN"),
    ("vendor_data2.json", "VENDOR2.JSN"),
    ("user_data", "USER"),
)


def contents(node_uuid: str, node_name: str | None, drive: Mapping[str, Any]) -> dict[str, bytes]:
    """The files of one version directory, by name: what :func:`build` puts on the drive."""
    meta = dict(drive.get("meta_data") or {})
    meta.setdefault("uuid", node_uuid)
    if node_name:
        meta.setdefault("name", node_name)
    files = {"meta_data.json": json.dumps(meta).encode()}
    for key, name in (("network_data", "network_data.json"), ("vendor_data", "vendor_data2.json")):
        if drive.get(key):
            files[name] = json.dumps(drive[key]).encode()
    user_data = drive.get("user_data")
    if isinstance(user_data, (dict, list)):
        files["user_data"] = json.dumps(user_data).encode()
    elif user_data:
        files["user_data"] = str(user_data).encode()
    return files


def build(node_uuid: str, node_name: str | None, drive: Mapping[str, Any]) -> str:
    """The config drive image of ``drive`` (the JSON form), gzipped and base64-encoded."""
    import pycdlib  # the agent extra: only a deploy with a JSON config drive needs it

    files = contents(node_uuid, node_name, drive)
    iso = pycdlib.PyCdlib()
    iso.new(interchange_level=3, vol_ident="config-2", joliet=3, rock_ridge="1.09")
    iso.add_directory("/OPENSTAC", rr_name="openstack", joliet_path="/openstack")
    for number, version in enumerate(VERSIONS):
        directory = f"/OPENSTAC/V{number}"
        iso.add_directory(directory, rr_name=version, joliet_path=f"/openstack/{version}")
        for name, short in _FILES:
            if name in files:
                data = files[name]
                iso.add_fp(
                    io.BytesIO(data), len(data), f"{directory}/{short};1",
                    rr_name=name, joliet_path=f"/openstack/{version}/{name}",
                )  # fmt: skip
    image = io.BytesIO()
    iso.write_fp(image)
    iso.close()
    return base64.b64encode(gzip.compress(image.getvalue())).decode("ascii")
