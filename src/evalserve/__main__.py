"""``python -m evalserve ...`` is the ``evalserve`` command."""

from evalserve.cli import run

run()
