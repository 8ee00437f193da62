"""Public interval helpers of the core, for callers outside it (the report draws Wilson bands
with the same arithmetic as the results' intervals)."""

from evalserve.core._distributions import normal_quantile
from evalserve.core.binary._intervals import wilson_band, wilson_interval

__all__ = ["normal_quantile", "wilson_band", "wilson_interval"]
