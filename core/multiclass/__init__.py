"""The multiclass task: n rows, one true class each, an n x k score matrix and, optionally, hard
predictions.

``compute_multiclass`` returns a ``TaskOutput`` with every metric of the catalog for task
multiclass, one ``per_class`` row per class (one-vs-rest, with DeLong's interval of its AUC),
the confusion matrix and the macro-average ROC curve in ``curves``, warnings naming the
classes the averages left out, and ``CONVENTIONS`` (where scikit-learn's defaults differ, they
say how). ``CATALOG_ENTRIES`` classifies every metric name it emits.
"""

from evalserve.core.multiclass._catalog import CATALOG_ENTRIES, CONVENTIONS
from evalserve.core.multiclass._suite import compute_multiclass

__all__ = ["CATALOG_ENTRIES", "CONVENTIONS", "compute_multiclass"]
