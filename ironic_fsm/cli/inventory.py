"""``node inventory NODE [--file FILE]``: what the node's last inspection reported.

As ``openstack baremetal node inventory save``: the inventory and plugin
data as one JSON document, on standard output or into ``--file``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ironic_fsm.cli.database import _open_conductor


def _cmd_inventory(args: argparse.Namespace) -> int:
    with _open_conductor(args) as conductor:
        kept = conductor.get_node_inventory(args.node)
    text = json.dumps({"inventory": kept.inventory, "plugin_data": kept.plugin_data}, indent=2)
    if args.file:
        Path(args.file).write_text(text + "\n")
    else:
        sys.stdout.write(text + "\n")
    return 0
