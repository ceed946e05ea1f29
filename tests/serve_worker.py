"""``ironic-fsm serve`` in a process that also serves the ``serve-test`` hardware type.

Run as ``python tests/serve_worker.py serve --db URL ...``: the arguments go
to the same ``ironic_fsm.cli.main`` as the console script's; only the test
hardware type is registered first.
"""

from __future__ import annotations

import sys

from serve_hardware import NAME, serve_test_hardware

from ironic_fsm.cli import main
from ironic_fsm.cli.serve import register_hardware_type

if __name__ == "__main__":
    register_hardware_type(NAME, serve_test_hardware())
    sys.exit(main(sys.argv[1:]))
