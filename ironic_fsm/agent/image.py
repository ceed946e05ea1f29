"""The image a ``direct`` deploy writes: checked from ``instance_info``, described for the agent.

Ironic's agent deploy takes a whole-disk image by URL (``image_source``,
HTTP or HTTPS), its checksum (``image_os_hash_algo`` and
``image_os_hash_value``, or the older ``image_checksum``) and its format
(``image_disk_format``: ``raw`` is streamed straight to the disk, anything
else is converted by the agent). The agent downloads it itself; the
conductor only checks that the request is complete (:func:`check_request`),
that the image answers a ``HEAD`` (:func:`check_reachable`, as Ironic does
while preparing), and hands the agent its ``image_info``
(:func:`image_info`). The texts are Ironic's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ironic_fsm.exceptions import InvalidParameterValue, MissingDependency

__all__ = ["ImageRefValidationFailed", "check_reachable", "check_request", "image_info"]

#: Seconds the ``HEAD`` of an image may take (Ironic's ``[DEFAULT]webserver_verify_timeout``).
HEAD_TIMEOUT: Final = 60.0
#: What marks a partition image (kernel and ramdisk of their own): not written here.
_PARTITION_KEYS: Final = ("kernel", "ramdisk")


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
    if any(info.get(key) for key in _PARTITION_KEYS):
        raise InvalidParameterValue(
            f"Node {node}: instance_info names a kernel and ramdisk (a partition image); "
            "the 'direct' deploy interface writes whole-disk images only",
            node=node,
        )


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
    node: str, info: Mapping[str, Any], *, stream_raw_images: bool = True
) -> dict[str, Any]:
    """The ``image_info`` of IPA's ``write_image`` deploy step, from ``instance_info``."""
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
    configdrive = info.get("configdrive")
    if configdrive:
        described["configdrive"] = configdrive
    return described
