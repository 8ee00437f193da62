"""Box intersection over union.

Boxes are ``[x1, y1, x2, y2]`` in continuous coordinates: the area is ``(x2 - x1) * (y2 - y1)``
with no "+1 pixel" (COCO and torchvision; the VOC devkit and Detectron's old code add 1 to
widths and heights). IoU = intersection / (area_a + area_b - intersection), evaluated in that
order, as pycocotools' ``bbIou``; boxes that only touch, or a zero-area box, give 0.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["box_area", "box_iou"]

Floats = NDArray[np.float64]


def box_area(boxes: Floats) -> Floats:
    """``(x2 - x1) * (y2 - y1)`` of each row of an (n, 4) array."""
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def box_iou(first: Floats, second: Floats) -> Floats:
    """The (len(first), len(second)) matrix of IoU between every pair of boxes."""
    width = np.minimum(first[:, None, 2], second[None, :, 2]) - np.maximum(
        first[:, None, 0], second[None, :, 0]
    )
    height = np.minimum(first[:, None, 3], second[None, :, 3]) - np.maximum(
        first[:, None, 1], second[None, :, 1]
    )
    intersection = np.where((width > 0) & (height > 0), width * height, 0.0)
    union = box_area(first)[:, None] + box_area(second)[None, :] - intersection
    # A positive intersection implies a positive union; elsewhere the IoU is 0, also for 0/0.
    return np.divide(intersection, union, out=np.zeros_like(intersection), where=intersection > 0)
