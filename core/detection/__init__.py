"""Object detection: COCO mAP (pycocotools) and VOC AP from boxes, classes and scores.

``compute_detection(targets, predictions, *, classes=None, options)`` returns a ``TaskOutput``
with ``map map_50 map_75 ap_50_voc11 ap_50_voc_all recall_50`` and COCO's summary ``map_small
map_medium map_large mar_1 mar_10 mar_100 mar_small mar_medium mar_large`` (pycocotools'
``COCOeval.stats[3:12]``), each macro over the classes that have ground truth (in the area
range), ``n_images n_ground_truth n_predictions``, and one ``per_class`` row per class: ``class
ap ap_50 ap_75 ap_50_voc11 ap_50_voc_all recall_50 ap_small ap_medium ap_large ar_1 ar_10
ar_100 ar_small ar_medium ar_large n_ground_truth n_predictions``.

Conventions (also in ``CONVENTIONS``, sent with every response):

* Boxes are ``[x1, y1, x2, y2]``; area = (x2 - x1)(y2 - y1), no +1 pixel. IoU >= threshold is a
  hit.
* Predictions: the ``options.max_detections`` highest-scoring of each image are kept (over all
  classes). Matching is greedy by score, one prediction per ground truth box, with the COCO
  rule for the COCO metrics and the VOC rule for the VOC ones (``_matching``). Tied scores are
  not grouped: they rank in input order, image by image.
* ``mar_1`` and ``mar_10`` count the 1 and 10 highest-scoring kept predictions of each image and
  class (pycocotools' maxDets = [1, 10, max_detections]); ``mar_100``, the area ranges and the
  APs count every kept prediction, so they follow ``max_detections`` as pycocotools' stats[0]
  and stats[8] follow maxDets[2].
* Area ranges (Lin et al. 2014): small [0, 32^2], medium [32^2, 96^2], large [96^2, 1e10] on the
  box area, bounds included; ground truth outside the range is ignored (pycocotools'
  ``evaluateImg``), and so are unmatched predictions outside it.
* A class without ground truth (in the range) has null metrics with a reason and is left out of
  the means (COCO's rule), with a warning when it has predictions. Crowd and difficult
  annotations are not supported.
"""

from evalserve.core.detection._catalog import CATALOG_ENTRIES, CONVENTIONS
from evalserve.core.detection._iou import box_iou
from evalserve.core.detection._suite import compute_detection

__all__ = ["CATALOG_ENTRIES", "CONVENTIONS", "box_iou", "compute_detection"]
