"""Regression metrics: labels y and predictions ŷ (finite floats), optional sample weights.

``*_error`` and the criteria (aic, bic, mallows_cp) are lower-is-better; r2, adjusted_r2 and
explained_variance higher-is-better (sklearn's naming contract, ``sklearn/metrics/_ranking.py``).
Formulas: ``CATALOG_ENTRIES``; the choices where references differ: ``CONVENTIONS``.
"""

from evalserve.core.regression._catalog import CATALOG_ENTRIES, CONVENTIONS
from evalserve.core.regression._suite import compute_regression

__all__ = ["CATALOG_ENTRIES", "CONVENTIONS", "compute_regression"]
