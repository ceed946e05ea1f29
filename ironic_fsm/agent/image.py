"""The image a ``direct`` deploy writes: checked from ``instance_info``, described for the agent.

Ironic's agent deploy takes an image by URL (``image_source``, HTTP or
HTTPS), its checksum (``image_os_hash_algo`` and ``image_os_hash_value``,
or the older ``image_checksum``) and its format (``image_disk_format``:
``raw`` is streamed straight to the disk, anything else is converted by
the agent). A whole-disk image is written as it is; a **partition image**
(``image_type: partition``, or a ``kernel``/``ramdisk`` named beside it)
goes into a root partition of ``root_gb`` GiB the agent makes (with
``swap_mb`` and ``ephemeral_gb`` partitions if asked), and its bootloader
is then installed by the agent. A ``configdrive`` (a gzipped, base64
encoded image, or its URL) is written by the agent to a partition of its
own, labelled ``config-2``. The agent downloads all of it itself; the
conductor only checks that the request is complete (:func:`check_request`),
that the image answers a ``HEAD`` (:func:`check_reachable`, as Ironic does
while preparing), and hands the agent its ``image_info``
(:func:`image_info`). The texts are Ironic's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ironic_fsm.exceptions import InvalidParameterValue, MissingDependency

__all__ = [
    "PARTITION",
    "WHOLE_DISK",
    "ImageRefValidationFailed",
    "check_reachable",
    "check_request",
    "image_info",
    "is_partition_image",
]

#: Seconds the ``HEAD`` of an image may take (Ironic's ``[DEFAULT]webserver_verify_timeout``).
HEAD_TIMEOUT: Final = 60.0
#: What marks a partition image without an ``image_type``: a kernel and ramdisk of its own.
_PARTITION_KEYS: Final = ("kernel", "ramdisk")
#: ``instance_info.image_type`` values (Ironic's).
PARTITION: Final = "partition"
WHOLE_DISK: Final = "whole-disk"
#: Ironic's disk layout fields of a partition image, integers.
_LAYOUT: Final = ("root_gb", "swap_mb", "ephemeral_gb")
#: ``instance_info`` fields the agent is handed as they are for a partition image.
_PARTITION_LABELS: Final = ("kernel", "ramdisk", "root_gb", "ephemeral_format", "configdrive")


class ImageRefValidationFailed(InvalidParameterValue):
    """The image's URL does not answer a ``HEAD`` with 200 (Ironic's exception of this name)."""


def check_request(node: str, info: Mapping[str, Any]) -> None:
    """What Ironic's ``AgentDeploy.validate`` asks of node ``node``'s ``instance_info``.

    Raises:
        InvalidParameterValue: no ``image_source``, no checksum, a scheme the
            agent cannot download, or a partition image.
    """
    source = info.get("image_source")
    if not source:
        raise InvalidParameterValue(
            f"Node {node} failed to validate deploy image info. Some parameters were "
            "missing. Missing are: ['instance_info.image_source']",
            node=node,
        )
    if not isinstance(source, str) or not source.startswith(("http://", "https://")):
        raise InvalidParameterValue(
            f"Node {node}: the 'direct' deploy interface writes images served over "
            f"HTTP(S); image_source {source!r} is not such a URL",
            node=node,
        )
    algo, value = info.get("image_os_hash_algo"), info.get("image_os_hash_value")
    if bool(algo) != bool(value) or not (value or info.get("image_checksum")):
        raise InvalidParameterValue(
            'image_source\'s "image_checksum", or "image_os_hash_algo" and '
            f'"image_os_hash_value" must be provided in instance_info for node {node}',
            node=node,
        )
    image_type = info.get("image_type")
    if image_type is not None and image_type not in (PARTITION, WHOLE_DISK):
        raise InvalidParameterValue(
            f'Invalid image_type "{image_type}", valid are {PARTITION}, {WHOLE_DISK}', node=node
        )
    if is_partition_image(info):
        _check_layout(node, info)
    elif info.get("swap_mb") or info.get("ephemeral_mb") or info.get("ephemeral_gb"):
        raise InvalidParameterValue(
            "Cannot deploy whole disk image with swap or ephemeral size set", node=node
        )


def is_partition_image(info: Mapping[str, Any]) -> bool:
    """A partition image: ``image_type`` says so, or (without one) a kernel or ramdisk is named."""
    image_type = info.get("image_type")
    if image_type is not None:
        return bool(image_type == PARTITION)
    return any(info.get(key) for key in _PARTITION_KEYS)


def _check_layout(node: str, info: Mapping[str, Any]) -> None:
    """A partition image's layout: ``root_gb`` given, the sizes whole numbers (Ironic's words)."""
    if info.get("root_gb") in (None, ""):
        raise InvalidParameterValue(
            "Some parameters were missing in node's instance_info. Missing are: ['root_gb']",
            node=node,
        )
    for field in _LAYOUT:
        value = info.get(field, 0)
        if isinstance(value, bool) or not _whole(value):
            raise InvalidParameterValue(
                f"Invalid parameter {field}: {value} is not an integer value.", node=node
            )
    if _flag(info.get("preserve_ephemeral", False)) is None:
        raise InvalidParameterValue(
            f"Invalid parameter preserve_ephemeral: {info['preserve_ephemeral']!r} is not a "
            "Boolean",
            node=node,
        )
    if int(info["root_gb"]) < 1:
        raise InvalidParameterValue(
            f"Invalid parameter root_gb: {info['root_gb']} is not a positive integer value.",
            node=node,
        )


def _flag(value: Any) -> bool | None:
    """A Boolean, or one of its spellings as a string (Ironic's strict reading); else None."""
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower() if isinstance(value, str) else None
    if word in ("1", "t", "true", "on", "y", "yes"):
        return True
    if word in ("0", "f", "false", "off", "n", "no"):
        return False
    return None


def _whole(value: Any) -> bool:
    try:
        int(value)
    except (TypeError, ValueError):
        return False
    return True


def check_reachable(url: str, timeout: float = HEAD_TIMEOUT) -> None:
    """The image answers ``HEAD`` with 200 (redirects followed), as Ironic checks it.

    Raises:
        ImageRefValidationFailed: another status, or no answer at all.
    """
    try:
        import httpx
    except ImportError:  # pragma: no cover - the extra is part of the test set
        raise MissingDependency(
            "Checking an image URL needs httpx: pip install 'ironic_fsm[agent]'", extra="agent"
        ) from None
    try:
        response = httpx.head(url, timeout=timeout, follow_redirects=True)
    except httpx.HTTPError as error:
        raise ImageRefValidationFailed(
            f"Validation of image href {url} failed, reason: {error or type(error).__name__}"
        ) from None
    if response.status_code != 200:
        raise ImageRefValidationFailed(
            f"Validation of image href {url} failed, reason: Got HTTP code "
            f"{response.status_code} instead of 200 in response to HEAD request."
        )


def image_info(
    node: str,
    info: Mapping[str, Any],
    *,
    stream_raw_images: bool = True,
    boot_mode: str = "uefi",
    disk_label: str | None = None,
) -> dict[str, Any]:
    """The ``image_info`` of IPA's ``write_image`` deploy step, from ``instance_info``.

    ``boot_mode`` and ``disk_label`` (the node's, as the deploy interface
    reads them) shape a partition image's partition table.
    """
    source = str(info["image_source"])
    described: dict[str, Any] = {
        "id": source.rstrip("/").split("/")[-1],
        "urls": [str(info.get("image_url") or source)],
        "disk_format": info.get("image_disk_format"),
        "container_format": info.get("image_container_format"),
        "stream_raw_images": stream_raw_images,
        "node_uuid": node,
    }
    if info.get("image_checksum"):
        described["checksum"] = info["image_checksum"]
    if info.get("image_os_hash_algo") and info.get("image_os_hash_value"):
        described["os_hash_algo"] = info["image_os_hash_algo"]
        described["os_hash_value"] = info["image_os_hash_value"]
    if is_partition_image(info):
        described.update(_partition_info(info, boot_mode, disk_label))
    configdrive = info.get("configdrive")
    if configdrive:
        described["configdrive"] = configdrive
    return described


def _partition_info(
    info: Mapping[str, Any], boot_mode: str, disk_label: str | None
) -> dict[str, Any]:
    """What IPA's partition image writer reads: the layout in MiB, the boot mode and label."""
    described = {label: info.get(label) for label in _PARTITION_LABELS}
    ephemeral_gb = int(info.get("ephemeral_gb") or 0)
    described.update(
        root_mb=1024 * int(info["root_gb"]),
        swap_mb=int(info.get("swap_mb") or 0),
        ephemeral_mb=1024 * ephemeral_gb,
        ephemeral_format=info.get("ephemeral_format") or ("ext4" if ephemeral_gb else None),
        preserve_ephemeral=bool(_flag(info.get("preserve_ephemeral", False))),
        image_type=PARTITION,
        deploy_boot_mode=boot_mode,
        boot_option="local",
    )
    if disk_label is not None:
        described["disk_label"] = disk_label
    return described
