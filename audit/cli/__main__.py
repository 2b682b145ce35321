"""``python -m audit.cli``: the same as the ``mirror-audit`` command."""

import sys

from audit.cli import main

sys.exit(main())
