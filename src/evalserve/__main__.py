"""``python -m evalserve ...`` is the ``evalserve`` command."""

import sys

from evalserve.cli import main

sys.exit(main())
