"""``EvaluationResult.plot()``: the curves and the confusion matrix an answer carries, one panel
each, with matplotlib (the optional extra ``evalserve-client[plot]``).

What an answer carries, by task (core/binary/_suite.py, core/multiclass/_suite.py): binary, the
ROC and PR curves in ``curves.roc`` / ``curves.pr`` and the confusion counts at the threshold in
``metrics`` (tn, fp, fn, tp); multiclass, the macro-average ROC curve in ``curves.roc_macro`` and
the k x k matrix in ``curves.confusion_matrix`` (row-major, shape [k, k], classes in per_class
order). Other tasks carry no curve, and ``max_curve_points = 0`` omits them all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from evalserve_client._result import EvaluationResult

__all__ = ["plot"]

Panel = Callable[["Axes"], None]


def plot(result: EvaluationResult, figure: Figure | None = None) -> Figure:
    try:
        from matplotlib import figure as mpl_figure
    except ImportError as error:
        raise ImportError(
            "EvaluationResult.plot() needs matplotlib, the client's optional extra: "
            "pip install 'evalserve-client[plot]'"
        ) from error
    panels = _panels(result)
    if not panels:
        raise ValueError(
            f"nothing to plot: this {result.task} result carries no ROC or PR curve and no "
            "confusion matrix (only binary and multiclass answers do, and not with "
            "options.max_curve_points = 0)"
        )
    if figure is None:
        figure = mpl_figure.Figure(figsize=(4.8 * len(panels), 4.4), layout="constrained")
    for axes, draw in zip(figure.subplots(1, len(panels), squeeze=False)[0], panels, strict=True):
        draw(axes)
    return figure


def _panels(result: EvaluationResult) -> list[Panel]:
    curves, metrics = result.curves, result.metrics
    panels: list[Panel] = []
    for name, title, auc in (("roc", "ROC curve", "roc_auc"),
                             ("roc_macro", "Macro-average ROC curve (one vs rest)",
                              "roc_auc_ovr_macro")):  # fmt: skip
        if name in curves:
            panels.append(_roc(curves[name]["fpr"], curves[name]["tpr"], title, metrics.get(auc)))
    if "pr" in curves:
        pr = curves["pr"]
        panels.append(_pr(pr["recall"], pr["precision"], metrics.get("average_precision")))
    if "confusion_matrix" in curves:
        matrix = curves["confusion_matrix"]
        rows, columns = (int(_array(matrix["shape"])[i]) for i in (0, 1))
        names = [str(row.get("class", i)) for i, row in enumerate(result.per_class)]
        if len(names) != rows:
            names = [str(i) for i in range(rows)]
        panels.append(_confusion(_array(matrix["matrix"]).reshape(rows, columns), names))
    elif all(metrics.get(key) is not None for key in ("tn", "fp", "fn", "tp")):
        counts = [[metrics["tn"], metrics["fp"]], [metrics["fn"], metrics["tp"]]]
        panels.append(_confusion(_array(counts), ["0", "1"], "at the threshold"))
    return panels


def _array(values: Sequence[object]) -> NDArray[np.float64]:
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


def _label(name: str, value: float | None) -> str:
    return name if value is None else f"{name} = {value:.4f}"


def _roc(fpr: Sequence[float | None], tpr: Sequence[float | None], title: str,
         auc: float | None) -> Panel:  # fmt: skip
    def draw(axes: Axes) -> None:
        axes.plot(_array(fpr), _array(tpr), label=_label("AUC", auc))
        axes.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=0.8, label="chance")
        axes.set(xlim=(0, 1), ylim=(0, 1.01), title=title, aspect="equal",
                 xlabel="false positive rate", ylabel="true positive rate")  # fmt: skip
        axes.legend(loc="lower right")

    return draw


def _pr(recall: Sequence[float | None], precision: Sequence[float | None],
        average_precision: float | None) -> Panel:  # fmt: skip
    def draw(axes: Axes) -> None:
        # step-wise, as average_precision sums it: the precision of each point holds over the
        # recall interval that ends there
        axes.plot(_array(recall), _array(precision), drawstyle="steps-pre",
                  label=_label("AP", average_precision))  # fmt: skip
        axes.set(xlim=(0, 1), ylim=(0, 1.01), title="Precision-recall curve", aspect="equal",
                 xlabel="recall", ylabel="precision")  # fmt: skip
        axes.legend(loc="lower left")

    return draw


def _confusion(matrix: NDArray[np.float64], classes: list[str], when: str = "") -> Panel:
    def draw(axes: Axes) -> None:
        axes.imshow(matrix, cmap="Blues")
        middle = np.nanmax(matrix) / 2 if matrix.size else 0.0
        for (row, column), value in np.ndenumerate(matrix):
            axes.text(column, row, f"{value:g}", ha="center", va="center",
                      color="white" if value > middle else "black")  # fmt: skip
        ticks = range(len(classes))
        axes.set(xticks=ticks, yticks=ticks, xlabel="predicted", ylabel="true",
                 title=f"Confusion matrix {when}".strip())  # fmt: skip
        axes.set_xticklabels(classes)
        axes.set_yticklabels(classes)

    return draw
