"""Detection input: checked once, flattened to one array per field with the image of each row.

Errors name the REST field of the offending image: ``images[3].pred_boxes``,
``images[0].gt_classes`` (per image ``gt_boxes gt_classes pred_boxes pred_classes
pred_scores``), the row of the offending box and what came.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalserve.core._errors import InvalidInputError

__all__ = ["Boxes", "Scene", "class_names", "refuse_row_columns", "scene"]

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]

# Class ids travel as JSON numbers: beyond 2^53 a float no longer holds every integer.
MAX_CLASS_ID = 2**53


@dataclass(frozen=True, slots=True, eq=False)
class Boxes:
    """Boxes of all images, image-major in input order: row i sits in image ``image[i]``."""

    boxes: Floats  # (n, 4) x1, y1, x2, y2
    classes: Ints  # (n,)
    image: Ints  # (n,)
    scores: Floats | None = None  # (n,) predictions only

    @property
    def size(self) -> int:
        return int(self.classes.size)


@dataclass(frozen=True, slots=True, eq=False)
class Scene:
    n_images: int
    ground_truth: Boxes
    predictions: Boxes


def scene(targets: Any, predictions: Any, n_classes: int | None) -> Scene:
    """Every check of a detection request. ``n_classes``: class ids must be below it."""
    targets = _images("images", targets)
    predictions = _images("images", predictions)
    if len(targets) != len(predictions):
        raise InvalidInputError(
            "images",
            f"expected predictions for each of the {len(targets)} images with ground truth, "
            f"but got {len(predictions)}",
        )
    if not targets:
        raise InvalidInputError("images", "is empty; expected at least one image")
    gt = _Parts()
    pred = _Parts()
    for index, (target, prediction) in enumerate(zip(targets, predictions, strict=True)):
        where = f"images[{index}]"
        target = _image(where, target, "gt_", ("boxes", "classes"))
        prediction = _image(where, prediction, "pred_", ("boxes", "classes", "scores"))
        boxes = _boxes(f"{where}.gt_boxes", target["boxes"])
        gt.add(boxes, _class_ids(f"{where}.gt_classes", target["classes"], len(boxes), n_classes))
        boxes = _boxes(f"{where}.pred_boxes", prediction["boxes"])
        pred.add(
            boxes,
            _class_ids(f"{where}.pred_classes", prediction["classes"], len(boxes), n_classes),
            _scores(f"{where}.pred_scores", prediction["scores"], len(boxes)),
        )
    return Scene(len(targets), gt.stack(), pred.stack())


def refuse_row_columns(y_pred: Any, sample_weight: Any) -> None:
    """Detection takes whole images: hard predictions and row weights have no place in it."""
    if y_pred is not None or sample_weight is not None:
        field = "predictions" if y_pred is not None else "weights"
        raise InvalidInputError(field, "task 'detection' takes images, not row columns")


def class_names(classes: Any) -> list[str] | None:
    """Class names indexed by id: a list of distinct, non-empty strings."""
    if classes is None:
        return None
    if isinstance(classes, (str, bytes)) or not isinstance(classes, Sequence):
        raise InvalidInputError(
            "classes", f"expected a list of class names, but got {type(classes).__name__}"
        )
    names: list[str] = []
    seen: dict[str, int] = {}
    for index, name in enumerate(classes):
        if not isinstance(name, str) or not name:
            raise InvalidInputError(
                "classes", f"expected non-empty strings, but entry {index} is {name!r}"
            )
        if name in seen:
            raise InvalidInputError(
                "classes", f"expected distinct names, but {name!r} is at {seen[name]} and {index}"
            )
        seen[name] = index
        names.append(name)
    return names


def _images(field: str, images: Any) -> Sequence[Any]:
    if images is None:
        raise InvalidInputError(field, "is required")
    if isinstance(images, (str, bytes, Mapping)) or not isinstance(images, Sequence):
        raise InvalidInputError(
            field, f"expected a list with one entry per image, but got {type(images).__name__}"
        )
    return images


def _image(where: str, image: Any, prefix: str, keys: tuple[str, ...]) -> Mapping[str, Any]:
    if not isinstance(image, Mapping):
        raise InvalidInputError(
            where,
            f"expected an object with {', '.join(prefix + key for key in keys)}, "
            f"but got {type(image).__name__}",
        )
    for key in keys:
        if image.get(key) is None:
            raise InvalidInputError(
                f"{where}.{prefix}{key}", "is required (send [] for an image without boxes)"
            )
    return image


def _numbers(field: str, values: Any) -> NDArray[Any]:
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            field, f"expected numbers, but could not read them ({exc})"
        ) from exc
    if array.size == 0:
        return array.reshape(0)
    if array.dtype.kind not in "iuf":
        raise InvalidInputError(field, f"expected numbers, but got values of type {array.dtype}")
    return array


def _boxes(field: str, values: Any) -> Floats:
    array = _numbers(field, values)
    if array.size == 0:
        return np.zeros((0, 4))
    if array.ndim != 2 or array.shape[1] != 4:
        raise InvalidInputError(
            field, f"expected shape (m, 4) of [x1, y1, x2, y2] boxes, but got shape {array.shape}"
        )
    boxes = array.astype(np.float64)
    finite = np.isfinite(boxes).all(axis=1)
    if not finite.all():
        row = int(np.argmin(finite))
        raise InvalidInputError(
            field, f"expected finite coordinates, but box {row} is {boxes[row].tolist()}"
        )
    for axis, name in ((0, "x"), (1, "y")):
        inverted = boxes[:, axis + 2] < boxes[:, axis]
        if inverted.any():
            row = int(np.argmax(inverted))
            raise InvalidInputError(
                field,
                f"expected {name}2 >= {name}1 ([x1, y1, x2, y2]), but box {row} is "
                f"{boxes[row].tolist()}",
            )
    return boxes


def _class_ids(field: str, values: Any, n_boxes: int, n_classes: int | None) -> Ints:
    array = _numbers(field, values)
    if array.ndim != 1:
        raise InvalidInputError(field, f"expected a 1-d array, but got shape {array.shape}")
    if array.size != n_boxes:
        raise InvalidInputError(
            field, f"expected {n_boxes} class ids (one per box), but got {array.size}"
        )
    if array.dtype.kind == "f":
        integral = np.isfinite(array) & (array == np.round(array)) & (np.abs(array) <= MAX_CLASS_ID)
        if not integral.all():
            row = int(np.argmin(integral))
            raise InvalidInputError(
                field, f"expected integer class ids, but row {row} is {array[row].item()!r}"
            )
    if array.dtype.kind == "u" and array.size and int(array.max()) > MAX_CLASS_ID:
        row = int(np.argmax(array))
        raise InvalidInputError(
            field, f"expected class ids <= {MAX_CLASS_ID}, but row {row} is {array[row].item()}"
        )
    ids = array.astype(np.int64)
    negative = ids < 0
    if negative.any():
        row = int(np.argmax(negative))
        raise InvalidInputError(field, f"expected class ids >= 0, but row {row} is {int(ids[row])}")
    if n_classes is not None:
        unknown = ids >= n_classes
        if unknown.any():
            row = int(np.argmax(unknown))
            raise InvalidInputError(
                field,
                f"expected class ids in [0, {n_classes - 1}] (indices into classes), "
                f"but row {row} is {int(ids[row])}"
                if n_classes
                else f"no classes were named, but row {row} is {int(ids[row])}",
            )
    return ids


def _scores(field: str, values: Any, n_boxes: int) -> Floats:
    array = _numbers(field, values)
    if array.ndim != 1:
        raise InvalidInputError(field, f"expected a 1-d array, but got shape {array.shape}")
    if array.size != n_boxes:
        raise InvalidInputError(
            field, f"expected {n_boxes} scores (one per box), but got {array.size}"
        )
    scores = array.astype(np.float64)
    finite = np.isfinite(scores)
    if not finite.all():
        row = int(np.argmin(finite))
        raise InvalidInputError(
            field, f"expected finite scores, but row {row} is {float(scores[row])}"
        )
    return scores


@dataclass(slots=True)
class _Parts:
    """The checked arrays of each image, stacked into one ``Boxes`` at the end."""

    boxes: list[Floats] = dataclasses.field(default_factory=list)
    classes: list[Ints] = dataclasses.field(default_factory=list)
    scores: list[Floats] = dataclasses.field(default_factory=list)

    def add(self, boxes: Floats, classes: Ints, scores: Floats | None = None) -> None:
        self.boxes.append(boxes)
        self.classes.append(classes)
        if scores is not None:
            self.scores.append(scores)

    def stack(self) -> Boxes:
        counts = [ids.size for ids in self.classes]
        return Boxes(
            boxes=np.concatenate(self.boxes).reshape(-1, 4),
            classes=np.concatenate(self.classes).astype(np.int64),
            image=np.repeat(np.arange(len(counts), dtype=np.int64), counts),
            scores=np.concatenate(self.scores) if self.scores else None,
        )
