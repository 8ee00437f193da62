"""The multilabel task: n rows x k labels, each a 0/1 truth, a score and a 0/1 prediction.

``compute_multilabel`` returns a ``TaskOutput`` with every metric of the catalog for task
multilabel, one ``per_class`` row per label, warnings naming what the averages left out, and
``CONVENTIONS`` (where scikit-learn's defaults differ, they say how). ``CATALOG_ENTRIES``
classifies every metric name it emits.
"""

from evalserve.core.multilabel._catalog import CATALOG_ENTRIES, CONVENTIONS
from evalserve.core.multilabel._suite import compute_multilabel

__all__ = ["CATALOG_ENTRIES", "CONVENTIONS", "compute_multilabel"]
