"""``python -m evalserve.service [flags]`` is ``evalserve serve [flags]``; ``python -m
evalserve.service evaluate ...`` runs the offline evaluator. As the ``evalserve`` command, it
first takes numpy's AVX2 sort where the AVX-512 one is slow (:mod:`evalserve.cpu_dispatch`)."""

import sys

from evalserve.cli import main
from evalserve.cpu_dispatch import restart_with_avx2_sort

restart_with_avx2_sort()
arguments = sys.argv[1:]
if not arguments or (arguments[0].startswith("-") and arguments[0] not in ("-h", "--help")):
    arguments = ["serve", *arguments]
sys.exit(main(arguments))
