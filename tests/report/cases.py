"""One evaluation of each task, as a person would send it, for the report's tests."""

from __future__ import annotations

from typing import Any

import numpy as np

from evalserve import evaluate
from evalserve.core import EvaluationResult

TASKS = ("binary", "multiclass", "multilabel", "regression", "detection")
# The pages the browser opens: each task's, and task binary's without operating-point options.
PAGES = (*TASKS, "binary-plain")
# Task binary's operating points, as a team running the model at one threshold asks for them.
OPERATING: dict[str, Any] = {
    "recall_at_precision": [0.8, 0.95],
    "precision_at_recall": [0.5],
    "tpr_at_fpr": [0.01, 0.1],
    "specificity_at_sensitivity": [0.9],
    "flagged_share": [0.05, 0.2],
}


def binary_rows(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Labels (30% positives) and probabilities that rank them well but not perfectly."""
    rng = np.random.default_rng(seed)
    labels = rng.random(n) < 0.3
    logits = rng.normal(size=n) + 1.6 * labels
    return labels.astype(np.int64), 1.0 / (1.0 + np.exp(-logits))


def case(task: str) -> tuple[EvaluationResult, dict[str, Any]]:
    """The result of ``task`` on generated rows, and the options it was evaluated with
    (``binary-plain``: task binary without the operating points' options)."""
    rng = np.random.default_rng(7)
    if task in ("binary", "binary-plain"):
        labels, scores = binary_rows(5000)
        options: dict[str, Any] = {"threshold": 0.4, "bootstrap_replicates": 0}
        if task == "binary":
            options.update(OPERATING)
        baseline = {"roc_auc": 0.86, "n_positive": 1500, "n_negative": 3500}
        return evaluate(
            "binary", labels, scores, options=options, baseline=baseline,
            coverage={"n_predictions": 6000},
        ), options  # fmt: skip
    if task == "multiclass":
        labels = rng.integers(0, 4, 2000)
        scores = rng.dirichlet(np.ones(4), 2000) + 0.3 * np.eye(4)[labels]  # right 3 times in 4
        scores /= scores.sum(axis=1, keepdims=True)
        classes = ["cat", "dog", "bird", "fish"]
        return evaluate("multiclass", labels, scores, classes=classes), {}
    if task == "multilabel":
        labels = (rng.random((1500, 5)) < 0.35).astype(np.int64)
        scores = np.clip(labels * 0.35 + rng.random((1500, 5)) * 0.65, 0, 1)
        return evaluate("multilabel", labels, scores), {}
    if task == "regression":
        actual = rng.normal(10, 3, 3000)
        predicted = actual + rng.normal(0, 1, 3000)
        return evaluate("regression", actual, predicted), {}
    targets, predictions = [], []
    for _ in range(40):
        boxes = rng.uniform(0, 80, (4, 2))
        boxes = np.hstack([boxes, boxes + rng.uniform(5, 20, (4, 2))])
        classes = rng.integers(0, 3, 4).tolist()
        targets.append({"boxes": boxes, "classes": classes})
        jitter = boxes + rng.normal(0, 1.5, boxes.shape)
        predictions.append(
            {"boxes": jitter, "classes": classes, "scores": rng.uniform(0.3, 1, 4).tolist()}
        )
    return evaluate("detection", targets, predictions), {}
