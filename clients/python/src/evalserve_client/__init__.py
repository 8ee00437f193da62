"""evalserve's Python client::

from evalserve_client import Client

with Client("localhost:50051") as client:  # or "http://localhost:8000" for REST
    result = client.evaluate("binary", y_true, y_score, options={"threshold": 0.3})
result.metrics["roc_auc"]

Every hour, the AUC monitor of a model against its baseline (the client keeps its state)::

    result = client.evaluate("binary", y_true, y_score, model={"name": "ranker"},
                             baseline={"roc_auc": 0.85, "n_positive": 4000, "n_negative": 16000})
    result.monitor["roc_auc"]["alarm"]

Operating points asked for by options (``recall_at_precision``, ``flagged_share``, ...)::

    result = client.evaluate("binary", y_true, y_score, options={"recall_at_precision": [0.95]})
    point = result.operating_point("recall_at_precision", 0.95)
    point.value, point.threshold, point.reason
"""

from evalserve_client._client import AsyncClient, Client
from evalserve_client._errors import (
    DeadlineExceeded,
    EvalserveError,
    InvalidArgument,
    TooLarge,
    Unavailable,
)
from evalserve_client._monitor_key import ModelKey
from evalserve_client._monitor_store import MonitorEntry, MonitorStates
from evalserve_client._operating import FlaggedShare, OperatingPoint, format_target
from evalserve_client._result import EvaluationResult, MetricInfo, MetricRange

__all__ = [
    "AsyncClient",
    "Client",
    "DeadlineExceeded",
    "EvalserveError",
    "EvaluationResult",
    "FlaggedShare",
    "InvalidArgument",
    "MetricInfo",
    "MetricRange",
    "ModelKey",
    "MonitorEntry",
    "MonitorStates",
    "OperatingPoint",
    "TooLarge",
    "Unavailable",
    "format_target",
]
