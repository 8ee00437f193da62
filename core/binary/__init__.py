"""The binary task: n rows, a 0/1 label and a score each (and optional hard predictions).

``core.evaluate`` runs it (``_suite.compute`` over the per-distinct-score ``BinaryStats``);
``CATALOG_ENTRIES`` classifies every metric name it emits and ``CONVENTIONS`` states, with every
result, the choices where references differ.
"""

from evalserve.core.binary._catalog import CATALOG_ENTRIES, CONVENTIONS

__all__ = ["CATALOG_ENTRIES", "CONVENTIONS"]
