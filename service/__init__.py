"""evalserve's imperative shell: decoding, validation at the edge, transports, gauges."""

import os

# The service already runs ``workers`` evaluations at once on its own threads; a BLAS library
# that also splits each dot product over every core only oversubscribes them (measured: one
# evaluation took 5x longer under load). One BLAS thread per evaluation thread, unless the
# operator says otherwise. This must run before numpy is first imported.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")
