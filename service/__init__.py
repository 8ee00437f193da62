"""evalserve's imperative shell: decoding, validation at the edge, transports, gauges."""
