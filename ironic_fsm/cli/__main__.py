"""``python -m ironic_fsm.cli``: the same as the ``ironic-fsm`` command."""

import sys

from ironic_fsm.cli import main

sys.exit(main())
