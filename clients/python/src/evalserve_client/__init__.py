"""evalserve's Python client::

from evalserve_client import Client

with Client("localhost:50051") as client:  # or "http://localhost:8000" for REST
    result = client.evaluate("binary", y_true, y_score, options={"threshold": 0.3})
result.metrics["roc_auc"]
"""

from evalserve_client._client import AsyncClient, Client
from evalserve_client._errors import (
    DeadlineExceeded,
    EvalserveError,
    InvalidArgument,
    TooLarge,
    Unavailable,
)
from evalserve_client._result import EvaluationResult, MetricInfo, MetricRange

__all__ = [
    "AsyncClient",
    "Client",
    "DeadlineExceeded",
    "EvalserveError",
    "EvaluationResult",
    "InvalidArgument",
    "MetricInfo",
    "MetricRange",
    "TooLarge",
    "Unavailable",
]
