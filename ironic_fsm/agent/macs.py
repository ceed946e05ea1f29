"""MAC addresses as agents send them: ``aa:bb:cc:dd:ee:ff``, ``AA-BB-..`` or bare hex."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["normalize_mac"]

_MAC: Final = re.compile(r"^[0-9a-f]{2}([:-]?)[0-9a-f]{2}(?:\1[0-9a-f]{2}){4}$")


def normalize_mac(address: str) -> str | None:
    """``address`` as ``aa:bb:cc:dd:ee:ff``, or None when it is no MAC address."""
    lowered = address.strip().lower()
    if not _MAC.match(lowered):
        return None
    digits = lowered.replace(":", "").replace("-", "")
    return ":".join(digits[i : i + 2] for i in range(0, 12, 2))
