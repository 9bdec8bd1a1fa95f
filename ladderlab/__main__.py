"""``python -m ladderlab``: the command line (as the ``ladderlab`` script)."""

import sys

from ladderlab.cli.entry import main

sys.exit(main())
