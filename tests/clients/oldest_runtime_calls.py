"""The calls of tests/clients/test_oldest_runtime.py, made by one client in one environment: run
as a script under .venv-client-floor's Python (the client's oldest claimed dependencies), it
prints their answers as JSON; the test makes the same calls with the main venv's client and
compares. It imports nothing but the client, numpy and the standard library, since the floor
venv has nothing else.

    python oldest_runtime_calls.py GRPC_TARGET REST_URL LIMITED_GRPC_TARGET LIMITED_REST_URL
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from evalserve_client import AsyncClient, Client, EvalserveError

DEPENDENCIES = (
    "numpy",
    "grpcio",
    "protobuf",
    "httpx",
    "orjson",
    "googleapis-common-protos",
    "matplotlib",
)


def _binary(n_rows: int) -> tuple[list[float], list[float]]:
    # plain arithmetic rather than a random generator: the same rows in any numpy
    labels = [float(i * 7 % 10 < 3) for i in range(n_rows)]
    scores = [
        round((i * 37 % 1000) / 1000 * 0.7 + 0.3 * label, 3) for i, label in enumerate(labels)
    ]
    return labels, scores


def _error(call: Any) -> dict[str, Any]:
    try:
        call()
    except EvalserveError as error:
        return {"type": type(error).__name__, "field": error.field, "code": error.code,
                "message": error.message}  # fmt: skip
    raise AssertionError("the call was not refused")


def _plotted(figure: Any) -> list[Any]:
    return [
        [[line.get_xdata().tolist(), line.get_ydata().tolist()] for line in axes.lines]
        + [np.asarray(image.get_array()).tolist() for image in axes.images]
        for axes in figure.axes
    ]


def _one_transport(target: str, limited: str) -> dict[str, Any]:
    labels, scores = _binary(300)
    weights = [1.0 + i % 3 for i in range(300)]
    classes = [i % 3 for i in range(90)]
    class_scores = np.full((90, 3), 0.2)
    class_scores[np.arange(90), [(c + i // 7) % 3 for i, c in enumerate(classes)]] = 0.6
    big_labels, big_scores = _binary(2500)
    answers: dict[str, Any] = {}
    with Client(target) as client:
        binary = client.evaluate(
            "binary", np.asarray(labels), scores, sample_weight=weights, options={"threshold": 0.4}
        )
        answers["binary"] = binary.to_dict()
        answers["plot"] = _plotted(binary.plot())
        answers["coverage"] = client.evaluate(
            "binary", labels, scores, coverage={"n_predictions": 1200, "label_delay_seconds": 60}
        ).to_dict()
        answers["multiclass"] = client.evaluate(
            "multiclass", classes, class_scores, classes=["a", "b", "c"]
        ).to_dict()
        answers["error"] = _error(
            lambda: client.evaluate("binary", [0, 1, 1], [0.2, float("nan"), 0.7])
        )
        answers["catalog"] = [dataclasses.asdict(entry) for entry in client.list_metrics()]
        answers["detection_catalog"] = [
            dataclasses.asdict(entry) for entry in client.list_metrics("detection")
        ]
        answers["catalog_error"] = _error(lambda: client.list_metrics("ranking"))
    # over the limited server's 2 000 rows a request: only a stream gets through
    with Client(limited, stream_threshold=1000, chunk_rows=700) as client:
        answers["streamed"] = client.evaluate("binary", big_labels, big_scores).to_dict()
        bad = list(big_scores)
        bad[1500] = float("nan")  # in the third streamed batch: a field with a space in it
        answers["stream_error"] = _error(lambda: client.evaluate("binary", big_labels, bad))

        async def refused() -> None:
            async with AsyncClient(target) as client:
                await client.evaluate("binary", [0, 1], [0.2])

        answers["async_error"] = _error(lambda: asyncio.run(refused()))
        answers["too_large"] = _error(
            lambda: client.evaluate(
                "binary", big_labels, big_scores, challenger={"scores": big_scores}
            )
        )

    async def awaited() -> dict[str, Any]:
        async with AsyncClient(limited, stream_threshold=1000, chunk_rows=700) as client:
            streamed, unary = await asyncio.gather(
                client.evaluate("binary", big_labels, big_scores),
                client.evaluate("binary", labels, scores),
            )
            return {"streamed": streamed.to_dict(), "unary": unary.to_dict()}

    answers["async"] = asyncio.run(awaited())
    return answers


def answers(grpc: str, rest: str, limited_grpc: str, limited_rest: str) -> dict[str, Any]:
    """Every answer, JSON-shaped, by transport."""
    return {"grpc": _one_transport(grpc, limited_grpc), "rest": _one_transport(rest, limited_rest)}


def versions() -> dict[str, str]:
    return {name: metadata.version(name) for name in DEPENDENCIES}


if __name__ == "__main__":
    import evalserve_client

    where = str(Path(evalserve_client.__file__).parent)
    json.dump(
        {"versions": versions(), "client": where, "answers": answers(*sys.argv[1:5])}, sys.stdout
    )
