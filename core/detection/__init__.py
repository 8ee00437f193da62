"""Object detection: COCO mAP (pycocotools) and VOC AP from boxes, classes and scores.

``compute_detection(targets, predictions, *, classes=None, options)`` returns a ``TaskOutput``
with ``map map_50 map_75 ap_50_voc11 ap_50_voc_all recall_50`` (macro over the classes that have
ground truth), ``n_images n_ground_truth n_predictions``, and one ``per_class`` row per class:
``class ap ap_50 ap_75 ap_50_voc11 ap_50_voc_all recall_50 n_ground_truth n_predictions``.

Conventions (also in ``CONVENTIONS``, sent with every response):

* Boxes are ``[x1, y1, x2, y2]``; area = (x2 - x1)(y2 - y1), no +1 pixel. IoU >= threshold is a
  hit.
* Predictions: the ``options.max_detections`` highest-scoring of each image are kept (over all
  classes). Matching is greedy by score, one prediction per ground truth box, with the COCO
  rule for the COCO metrics and the VOC rule for the VOC ones (``_matching``). Tied scores are
  not grouped: they rank in input order, image by image.
* A class without ground truth has null metrics with a reason and is left out of the means
  (COCO's rule), with a warning when it has predictions. Crowd and difficult annotations are
  not supported; COCO's area ranges (small/medium/large) are not computed.
"""

from evalserve.core.detection._catalog import CATALOG_ENTRIES, CONVENTIONS
from evalserve.core.detection._iou import box_iou
from evalserve.core.detection._suite import compute_detection

__all__ = ["CATALOG_ENTRIES", "CONVENTIONS", "box_iou", "compute_detection"]
