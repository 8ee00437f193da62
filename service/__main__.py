"""``python -m evalserve.service [flags]`` is ``evalserve serve [flags]``; ``python -m
evalserve.service evaluate ...`` runs the offline evaluator."""

import sys

from evalserve.cli import main

arguments = sys.argv[1:]
if not arguments or (arguments[0].startswith("-") and arguments[0] not in ("-h", "--help")):
    arguments = ["serve", *arguments]
sys.exit(main(arguments))
