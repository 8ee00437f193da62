"""evalserve's imperative shell: decoding, validation at the edge, transports, gauges.

Needs the ``service`` extra (``pip install 'evalserve[service]'``). Importing it changes no
process state: the server applies its process settings (allocator, BLAS threads, signal
handlers) when it starts (``evalserve.service.server.serve``)."""
