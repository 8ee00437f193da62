"""Detection images for the file tests: random images, and the one-image-per-row columns that
the offline evaluator and the Dask engine read (``DETECTION_COLUMNS``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from evalserve.offline import DETECTION_COLUMNS

Image = dict[str, Any]


def random_images(rng: np.random.Generator, n: int) -> tuple[list[Image], list[Image]]:
    """``n`` images of 0 to 3 ground-truth and 0 to 4 predicted 10 x 10 boxes of classes 0
    and 1, as lists (what a Parquet list column holds)."""
    targets, predictions = [], []
    for _ in range(n):
        k, m = int(rng.integers(0, 4)), int(rng.integers(0, 5))
        corner = rng.random((k, 2)) * 50
        targets.append(
            {
                "boxes": np.hstack([corner, corner + 10]).tolist(),
                "classes": rng.integers(0, 2, k).tolist(),
            }
        )
        corner = rng.random((m, 2)) * 50
        predictions.append(
            {
                "boxes": np.hstack([corner, corner + 10]).tolist(),
                "classes": rng.integers(0, 2, m).tolist(),
                "scores": rng.random(m).tolist(),
            }
        )
    return targets, predictions


def image_columns(targets: list[Image], predictions: list[Image]) -> dict[str, list[Any]]:
    """One row per image: ``DETECTION_COLUMNS`` from the images' boxes, classes and scores."""
    cells = (
        [t["boxes"] for t in targets],
        [t["classes"] for t in targets],
        [p["boxes"] for p in predictions],
        [p["classes"] for p in predictions],
        [p["scores"] for p in predictions],
    )
    return dict(zip(DETECTION_COLUMNS, cells, strict=True))
