"""``python -m interplace_analysis``: see :mod:`.cli`."""

import sys

from .cli import main

sys.exit(main())
