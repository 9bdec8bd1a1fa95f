"""``python -m ladderlab``: the command line (as the ``ladderlab`` script)."""

import sys

from ladderlab.entry import main

sys.exit(main())
