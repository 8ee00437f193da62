"""Task detection's state for the ``Accumulator``: the matched, ranked predictions of the images
so far (``_statistics.DetectionStats``).

An image is matched whole when its batch arrives (the ``max_detections`` cut and the matching
are per image), so batches and shards hold whole images and the state keeps no box. Tied scores
rank image by image in the order the images were added, as ``evaluate`` ranks them in request
order: ``merge`` puts this state's images before ``other``'s, and the ``Accumulator`` keeps that
order (its batches in the order of ``update``, ``a.merge(b)`` with a's images first). Merged in
any grouping, shards give exactly ``evaluate`` on their images in that order; shards whose
scores tie across them give another (equally exact) answer in another order, as ``evaluate``
does on the images reordered.

Besides the matches at area "all", the state keeps what COCO's AR at 1 and 10 detections and
its area ranges need (``_statistics.AreaStats``): arrays ``classes.n_ground_truth_by_area``,
``detections.rank`` and ``detections.area_flags``. A state written before they existed (format
versions 1 and 2: none of those arrays) still reads: its metrics that need them are null
with a reason, and so are those of any merge with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalserve.core._errors import InvalidInputError
from evalserve.core._options import Options
from evalserve.core._result import TaskOutput
from evalserve.core._state import Arrays, StateKind, array_of, count_of
from evalserve.core._state_format import Later
from evalserve.core.detection._inputs import MAX_CLASS_ID, class_names, refuse_row_columns, scene
from evalserve.core.detection._statistics import (
    AREA_BITS,
    AREA_RANGES,
    COCO_IOU_THRESHOLDS,
    AreaStats,
    DetectionStats,
    statistics_of,
)
from evalserve.core.detection._suite import detection_output

__all__ = ["DETECTION_STATE", "DetectionState"]

# Bytes per kept prediction: its score (float64), ten COCO flags and one VOC flag (bool), its
# rank in its image and class and its area ranges' flags (int64).
BYTES_PER_DETECTION = 8 + COCO_IOU_THRESHOLDS.size + 1 + 2 * 8
# Bytes per class: its id, its ground truth, received and kept counts and its ground truth in
# each area range (int64).
BYTES_PER_CLASS = (4 + len(AREA_RANGES)) * 8
# The area ranges' flags use these bits of an int64; any other bit set is damage.
AREA_FLAG_MASK = (1 << (len(AREA_RANGES) * AREA_BITS)) - 1
BYTES_FIXED = 3 * 8  # n_images, n_dropped, n_images_cut
INT64_MAX = 2**63 - 1
# The result reports counts as float64: beyond 2^53 images the count would not be exact.
MAX_IMAGES = 2**53


@dataclass(frozen=True, slots=True, eq=False)
class DetectionState:
    """The statistic of the images added so far, in the order they were added."""

    stats: DetectionStats

    @property
    def n_rows(self) -> int:
        return self.stats.n_images

    @property
    def size(self) -> int:
        return self.stats.n_detections + int(self.stats.class_ids.size)

    @property
    def nbytes(self) -> int:
        return sum(array.nbytes for array in self.to_arrays().values())

    @property
    def weightless(self) -> bool:
        return False  # detection takes no weights

    def for_result(self) -> DetectionState:
        return self.compact()

    def compact(self) -> DetectionState:
        return self  # merged at once

    def check_merge(self, other: DetectionState) -> None:
        pass  # any two states merge

    def merge(self, other: DetectionState) -> DetectionState:
        """This state's images followed by ``other``'s."""
        return DetectionState(self.stats.merge(other.stats))

    def to_bytes_arrays(self) -> tuple[Arrays, dict[str, Later]]:
        return self.to_arrays(), {}

    def to_arrays(self) -> Arrays:
        stats = self.stats
        arrays: Arrays = {
            "n_images": np.array(stats.n_images, dtype=np.int64),
            "n_dropped": np.array(stats.n_dropped, dtype=np.int64),
            "n_images_cut": np.array(stats.n_images_cut, dtype=np.int64),
            "classes.id": stats.class_ids,
            "classes.n_ground_truth": stats.n_truth,
            "classes.n_received": stats.n_received,
            "classes.n_kept": stats.n_kept,
            "detections.score": stats.scores,
            "detections.coco": stats.coco,
            "detections.voc": stats.voc,
        }
        if stats.areas is not None:
            arrays["classes.n_ground_truth_by_area"] = stats.areas.n_truth
            arrays["detections.rank"] = stats.areas.rank
            arrays["detections.area_flags"] = stats.areas.flags
        return arrays

    def output(self, options: Options, classes: tuple[str, ...] | None) -> TaskOutput:
        return detection_output(self.stats, class_names(classes), options.max_detections)


def _of_batch(
    y_true: Any,
    y_score: Any,
    y_pred: Any,
    sample_weight: Any,
    options: Options,
    classes: tuple[str, ...] | None,
) -> DetectionState:
    refuse_row_columns(y_pred, sample_weight)
    names = class_names(classes)
    checked = scene(y_true, y_score, None if names is None else len(names))
    return DetectionState(statistics_of(checked, options.max_detections))


# --- from_arrays: every array checked against what a state could have written -----------------


def _bad(message: str) -> InvalidInputError:
    return InvalidInputError("state", message)


def _counts(arrays: Mapping[str, NDArray[Any]], name: str, length: int) -> NDArray[np.int64]:
    values = array_of(arrays, name, np.int64, 1, length=length)
    if values.size and int(values.min()) < 0:
        raise _bad(f"array {name!r} holds a negative count")
    return values


def _total(values: NDArray[np.int64]) -> int:
    """The exact sum (Python integers: hostile counts must not wrap around)."""
    return sum(values.tolist())


def _from_arrays(
    arrays: Mapping[str, NDArray[Any]], options: Options, classes: tuple[str, ...] | None
) -> DetectionState:
    n_images = count_of(arrays, "n_images")
    n_dropped = count_of(arrays, "n_dropped")
    n_images_cut = count_of(arrays, "n_images_cut")
    if n_images == 0:
        raise _bad("holds no image (an empty accumulator writes no arrays)")
    if n_images > MAX_IMAGES:
        raise _bad(f"says {n_images} images, more than a count of images holds exactly (2^53)")
    if n_images_cut > min(n_images, n_dropped) or (n_dropped > 0) != (n_images_cut > 0):
        raise _bad(
            f"says {n_dropped} predictions were cut in {n_images_cut} of its {n_images} images"
        )
    class_ids = array_of(arrays, "classes.id", np.int64, 1)
    n_classes = int(class_ids.size)
    if n_classes and not (int(class_ids.min()) >= 0 and int(class_ids.max()) <= MAX_CLASS_ID):
        raise _bad(f"array 'classes.id' holds an id outside [0, {MAX_CLASS_ID}]")
    if n_classes > 1 and not (class_ids[1:] > class_ids[:-1]).all():
        raise _bad("array 'classes.id' is not strictly ascending")
    if classes is not None and n_classes and int(class_ids[-1]) >= len(classes):
        raise _bad(
            f"array 'classes.id' holds id {int(class_ids[-1])}, but {len(classes)} "
            "classes are named"
        )
    n_truth = _counts(arrays, "classes.n_ground_truth", n_classes)
    n_received = _counts(arrays, "classes.n_received", n_classes)
    n_kept = _counts(arrays, "classes.n_kept", n_classes)
    if ((n_truth == 0) & (n_received == 0)).any():
        raise _bad("holds a class with neither ground truth nor predictions")
    if (n_kept > n_received).any():
        raise _bad("holds a class with more kept predictions than it received")
    if _total(n_truth) > INT64_MAX or _total(n_received) > INT64_MAX:
        raise _bad("counts more boxes than a 64-bit count holds")
    n_detections = _total(n_kept)
    if _total(n_received) - n_detections != n_dropped:
        raise _bad(f"says {n_dropped} predictions were cut, but its counts do not add up to it")
    cut = options.max_detections
    if not n_images_cut * cut <= n_detections <= n_images * cut:
        raise _bad(
            f"keeps {n_detections} predictions, more than {cut} (options.max_detections) in "
            f"each of {n_images} images, or fewer than {cut} in each image that was cut"
        )
    scores = array_of(arrays, "detections.score", np.float64, 1, length=n_detections)
    coco = array_of(arrays, "detections.coco", np.bool_, 2, length=COCO_IOU_THRESHOLDS.size)
    voc = array_of(arrays, "detections.voc", np.bool_, 1, length=n_detections)
    if coco.shape[1] != n_detections:
        raise _bad(f"array 'detections.coco' has {coco.shape[1]} columns, expected {n_detections}")
    areas = _areas_of(arrays, n_images, n_truth, n_kept, cut)
    stats = DetectionStats(
        n_images, n_dropped, n_images_cut, class_ids, n_truth, n_received, n_kept, scores, coco,
        voc, areas,
    )  # fmt: skip
    _check_ranking(stats)
    return DetectionState(stats)


_AREA_ARRAYS = ("classes.n_ground_truth_by_area", "detections.rank", "detections.area_flags")


def _areas_of(
    arrays: Mapping[str, NDArray[Any]],
    n_images: int,
    n_truth: NDArray[np.int64],
    n_kept: NDArray[np.int64],
    cut: int,
) -> AreaStats | None:
    """The ranks and area ranges' flags, checked against the counts; None in a state written
    before they were kept (none of their arrays)."""
    if not any(name in arrays for name in _AREA_ARRAYS):
        return None
    n_classes, n_detections = int(n_truth.size), _total(n_kept)
    name = _AREA_ARRAYS[0]
    by_area = array_of(arrays, name, np.int64, 2, length=len(AREA_RANGES))
    if by_area.shape[1] != n_classes:
        raise _bad(f"array {name!r} has {by_area.shape[1]} columns, expected {n_classes}")
    if by_area.size and int(by_area.min()) < 0:
        raise _bad(f"array {name!r} holds a negative count")
    if (by_area > n_truth[None, :]).any():
        raise _bad("holds a class with more ground truth in an area range than in all")
    rank = array_of(arrays, "detections.rank", np.int64, 1, length=n_detections)
    flags = array_of(arrays, "detections.area_flags", np.int64, 1, length=n_detections)
    if rank.size and not (int(rank.min()) >= 0 and int(rank.max()) < cut):
        raise _bad(f"array 'detections.rank' holds a rank outside [0, {cut}) (max_detections)")
    _check_ranks(rank, n_kept, n_images)
    if (flags & ~AREA_FLAG_MASK).any():
        raise _bad("array 'detections.area_flags' holds a bit no area range uses")
    areas = AreaStats(by_area, rank, flags)
    _check_area_flags(areas, n_kept)
    return areas


def _check_ranks(rank: NDArray[np.int64], n_kept: NDArray[np.int64], n_images: int) -> None:
    """Within a class, each rank r > 0 belongs to an (image, class) that also holds rank r - 1:
    no more predictions of rank r than of rank r - 1, and at most one of rank 0 per image."""
    if rank.size == 0:
        return
    owner = np.repeat(np.arange(n_kept.size), n_kept)
    pairs, counts = np.unique(np.stack([owner, rank], axis=1), axis=0, return_counts=True)
    first = np.ones(len(pairs), dtype=np.bool_)
    first[1:] = pairs[1:, 0] != pairs[:-1, 0]
    follows = np.zeros(len(pairs), dtype=np.bool_)
    follows[1:] = (pairs[1:, 1] == pairs[:-1, 1] + 1) & (counts[1:] <= counts[:-1])
    consecutive = np.where(first, pairs[:, 1] == 0, follows).all()
    if not consecutive or int(counts[first].max()) > n_images:
        raise _bad(
            "array 'detections.rank' does not hold the ranks of predictions within their images "
            "and classes"
        )


def _check_area_flags(areas: AreaStats, n_kept: NDArray[np.int64]) -> None:
    """No prediction both a true positive and ignored, and no more true positives in a class
    and area range than it has ground truth there (at each threshold)."""
    n_thresholds = COCO_IOU_THRESHOLDS.size
    offsets = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(n_kept)])
    for area in range(len(AREA_RANGES)):
        found = (areas.flags >> (area * AREA_BITS)) & ((1 << n_thresholds) - 1)
        ignored = (areas.flags >> (area * AREA_BITS + n_thresholds)) & ((1 << n_thresholds) - 1)
        if (found & ignored).any():
            raise _bad("array 'detections.area_flags' marks a prediction found and ignored")
        for bit in range(n_thresholds):
            running = np.zeros(found.size + 1, dtype=np.int64)
            np.cumsum((found >> bit) & 1, out=running[1:])
            per_class = running[offsets[1:]] - running[offsets[:-1]]
            if (per_class > areas.n_truth[area]).any():
                raise _bad(
                    "array 'detections.area_flags' holds more true positives in a class and "
                    "area range than it has ground truth boxes there"
                )


def _check_ranking(stats: DetectionStats) -> None:
    """Finite scores, highest first within each class, and no more true positives in a class
    than it has ground truth boxes (at each threshold)."""
    scores = stats.scores
    if scores.size and not np.isfinite(scores).all():
        raise _bad("array 'detections.score' holds a value that is not finite")
    offsets = stats.offsets()
    starts = np.zeros(scores.size, dtype=np.bool_)
    starts[offsets[:-1][stats.n_kept > 0]] = True  # the first entry of each class
    if scores.size > 1 and not ((scores[1:] <= scores[:-1]) | starts[1:]).all():
        raise _bad("array 'detections.score' is not in ranking order within a class")
    for name, hits in (("coco", stats.coco), ("voc", stats.voc[None, :])):
        running = np.zeros((hits.shape[0], scores.size + 1), dtype=np.int64)
        np.cumsum(hits, axis=1, dtype=np.int64, out=running[:, 1:])
        per_class = running[:, offsets[1:]] - running[:, offsets[:-1]]
        if (per_class > stats.n_truth[None, :]).any():
            raise _bad(
                f"array 'detections.{name}' holds more true positives in a class than it has "
                "ground truth boxes"
            )


SIZE_DOC = (
    "Per kept prediction (at most `options.max_detections` per image): its score, whether "
    "it is a true positive at each of the ten COCO IoU thresholds and under the VOC rule, its "
    "rank in its image and class (for AR at 1 and 10 detections) and, packed in one integer, "
    "whether it is a true positive or ignored in each COCO area range at each threshold "
    f"({BYTES_PER_DETECTION} bytes); per class seen: its id, its ground truth, received and "
    f"kept counts and its ground truth in each area range ({BYTES_PER_CLASS} bytes). Each "
    "batch's images are matched when they arrive, so no box and no image is kept: the state "
    "grows with the kept predictions, not with the ground truth, and with the number of "
    f"classes only by {BYTES_PER_CLASS} bytes each. 10,000 images with 20 predictions each hold "
    f"200,000 entries ({200_000 * BYTES_PER_DETECTION / 1e6:.1f} MB); at the default cut of 100 "
    f"per image, at most {100 * BYTES_PER_DETECTION:,} bytes an image. Images are added whole; "
    "tied scores rank image by image in the order the images were added and merged, as "
    "`evaluate` ranks them in request order."
)

DETECTION_STATE = StateKind(of_batch=_of_batch, from_arrays=_from_arrays, size_doc=SIZE_DOC)
