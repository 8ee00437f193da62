"""``EvaluationResult.plot()`` (the extra ``evalserve-client[plot]``) on answers of a live server:
the lines and images drawn hold exactly the result's curves and confusion matrix, the figure
renders with Agg, and without matplotlib the error names the extra."""

from __future__ import annotations

import io
import sys

import matplotlib
import numpy as np
import pytest
from evalserve_client import Client, EvaluationResult
from matplotlib.figure import Figure

from tests.contract.servers import Service

matplotlib.use("Agg")


def _answer(
    service: Service, transport: str, *args: object, **keywords: object
) -> EvaluationResult:
    target = service.grpc_target if transport == "grpc" else service.url
    with Client(target) as client:
        return client.evaluate(*args, **keywords)  # type: ignore[arg-type]


def _rendered(figure: Figure) -> None:
    png = io.BytesIO()
    figure.savefig(png, format="png")
    assert png.getvalue().startswith(b"\x89PNG")


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_binary_answer_plots_its_roc_and_pr_curves_and_confusion_matrix(
    service: Service, transport: str
) -> None:
    rng = np.random.default_rng(11)
    labels = (rng.random(400) < 0.4).astype(float)
    scores = np.round(rng.random(400) * 0.6 + 0.3 * labels, 3)
    result = _answer(service, transport, "binary", labels, scores, options={"threshold": 0.4})
    figure = result.plot()
    roc_axes, pr_axes, matrix_axes = figure.axes
    roc, pr = result.curves["roc"], result.curves["pr"]
    np.testing.assert_array_equal(roc_axes.lines[0].get_xdata(), roc["fpr"])
    np.testing.assert_array_equal(roc_axes.lines[0].get_ydata(), roc["tpr"])
    np.testing.assert_array_equal(pr_axes.lines[0].get_xdata(), pr["recall"])
    np.testing.assert_array_equal(pr_axes.lines[0].get_ydata(), pr["precision"])
    assert pr_axes.lines[0].get_drawstyle() == "steps-pre"  # step-wise, as average_precision
    legend = roc_axes.get_legend()
    assert legend is not None
    assert f"{result.metrics['roc_auc']:.4f}" in legend.get_texts()[0].get_text()
    metrics = result.metrics
    expected = [[metrics["tn"], metrics["fp"]], [metrics["fn"], metrics["tp"]]]
    np.testing.assert_array_equal(matrix_axes.images[0].get_array(), expected)
    cells = [text.get_text() for text in matrix_axes.texts]
    assert cells == [f"{value:g}" for row in expected for value in row]
    _rendered(figure)


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_multiclass_answer_plots_its_macro_roc_curve_and_confusion_matrix(
    service: Service, transport: str
) -> None:
    rng = np.random.default_rng(12)
    labels = rng.integers(0, 3, size=300)
    scores = rng.dirichlet([1, 1, 1], size=300) + np.eye(3)[labels] * 0.5
    scores /= scores.sum(axis=1, keepdims=True)
    result = _answer(service, transport, "multiclass", labels, scores, classes=["a", "b", "c"])
    figure = result.plot()
    roc_axes, matrix_axes = figure.axes
    macro = result.curves["roc_macro"]
    np.testing.assert_array_equal(roc_axes.lines[0].get_xdata(), macro["fpr"])
    np.testing.assert_array_equal(roc_axes.lines[0].get_ydata(), macro["tpr"])
    matrix = result.curves["confusion_matrix"]
    expected = np.asarray(matrix["matrix"]).reshape(3, 3)
    assert matrix["shape"] == [3, 3]
    np.testing.assert_array_equal(matrix_axes.images[0].get_array(), expected)
    assert expected.sum() == 300
    assert [t.get_text() for t in matrix_axes.get_xticklabels()] == ["a", "b", "c"]
    assert [t.get_text() for t in matrix_axes.get_yticklabels()] == ["a", "b", "c"]
    _rendered(figure)


def test_plot_draws_on_the_figure_given(service: Service) -> None:
    result = _answer(service, "rest", "binary", [0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    figure = Figure()
    assert result.plot(figure) is figure
    assert len(figure.axes) == 3


def test_an_answer_without_curves_says_there_is_nothing_to_plot(service: Service) -> None:
    result = _answer(service, "grpc", "regression", [1.0, 2.0, 3.0], [1.1, 1.9, 3.2])
    with pytest.raises(ValueError, match="nothing to plot: this regression result"):
        result.plot()
    result = _answer(service, "grpc", "binary", [0, 1], [0.2, 0.7], options={"max_curve_points": 0})
    assert len(result.plot().axes) == 1  # no curves, still the confusion counts


def test_without_matplotlib_the_error_names_the_extra(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _answer(service, "rest", "binary", [0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    for name in [name for name in sys.modules if name.split(".")[0] == "matplotlib"]:
        monkeypatch.setitem(sys.modules, name, None)  # import of it raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'evalserve-client\[plot\]'"):
        result.plot()
