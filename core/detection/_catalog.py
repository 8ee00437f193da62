"""The detection metrics' catalog entries and the conventions every response states."""

from __future__ import annotations

from evalserve.core._catalog import entry_builder

__all__ = ["CATALOG_ENTRIES", "CLASS_METRICS", "CONVENTIONS", "MEAN_METRICS"]

_m = entry_builder("detection")


# Top-level mean -> the per-class metric it averages (macro over classes with ground truth).
MEAN_METRICS = {
    "map": "ap",
    "map_50": "ap_50",
    "map_75": "ap_75",
    "ap_50_voc11": "ap_50_voc11",
    "ap_50_voc_all": "ap_50_voc_all",
    "recall_50": "recall_50",
}
# The per-class metrics that are null for a class without ground truth.
CLASS_METRICS = tuple(MEAN_METRICS.values())

CATALOG_ENTRIES = (
    _m("n_images", None, "Number of images received."),
    _m("n_ground_truth", None, "Ground truth boxes received, all images and classes."),
    _m(
        "n_predictions", None,
        "Predicted boxes received, before the options.max_detections cut per image.",
    ),
    _m(
        "map", True,
        "COCO mAP: mean over IoU 0.50:0.05:0.95 and over classes with ground truth of the AP "
        "interpolated at 101 recall points (pycocotools, area all, maxDets = "
        "options.max_detections per image).",
        "map_50_95",
    ),
    _m("map_50", True, "COCO AP at IoU 0.5 (101-point), mean over classes with ground truth."),
    _m("map_75", True, "COCO AP at IoU 0.75 (101-point), mean over classes with ground truth."),
    _m(
        "ap_50_voc11", True,
        "VOC 2007 11-point AP at IoU 0.5: mean of max precision at recall >= r, "
        "r = 0, .1, ..., 1; VOC matching; mean over classes with ground truth.",
    ),
    _m(
        "ap_50_voc_all", True,
        "VOC 2010+ all-point AP at IoU 0.5: area under the monotone precision envelope; "
        "VOC matching; mean over classes with ground truth.",
    ),
    _m(
        "recall_50", True,
        "Share of ground truth boxes matched at IoU 0.5 by the kept predictions (COCO matching; "
        "COCO AR at one threshold), mean over classes with ground truth.",
    ),
)  # fmt: skip

CONVENTIONS = {
    "box_format": "[x1, y1, x2, y2] (COCO's [x, y, w, h] converted by the caller)",
    "iou": "box IoU, area = (x2 - x1)(y2 - y1), no +1 pixel (COCO; the VOC devkit adds 1)",
    "iou_threshold": "IoU >= threshold is a hit (seed 003; pycocotools; the VOC devkit uses >)",
    "matching": (
        "greedy by score, highest first; one prediction per ground truth box. COCO metrics: the "
        "free ground truth of highest IoU (the later box on equal IoU, as pycocotools). VOC "
        "metrics: the ground truth of highest IoU (the first on equal IoU); a prediction whose "
        "best box is taken is a false positive (VOC devkit)"
    ),
    "score_ties": (
        "not grouped: tied scores rank in input order, image by image (stable sort, as "
        "pycocotools' mergesort)"
    ),
    "max_detections": (
        "the options.max_detections highest-scoring predictions of each image over all classes "
        "are kept (ties: earlier in input order). pycocotools applies its maxDets per image and "
        "class; the two agree when no image has more predictions than the limit"
    ),
    "map": (
        "COCO: AP at IoU 0.50:0.05:0.95 with precision interpolated at 101 recall points "
        "(np.linspace(0, 1, 101), compared in floating point as pycocotools), then averaged"
    ),
    "ap_50_voc11": "VOC 2007 11-point: max precision at recall >= r, r = 0, .1, ..., 1 (exact)",
    "ap_50_voc_all": "VOC 2010+: area under the monotone precision envelope",
    "recall_50": "recall at IoU 0.5 with all kept predictions (COCO matching)",
    "classes": (
        "means are macro over classes with ground truth; a class without ground truth has null "
        "metrics and is left out (COCO's rule); a class with ground truth and no predictions "
        "counts with AP 0"
    ),
    "crowd_difficult": "not supported: every ground truth box counts (no iscrowd, no difficult)",
    "area_ranges": "not computed: COCO's small/medium/large AP and AR are not reported",
    "undefined": "null with a reason in `undefined`, never 0 or NaN",
}
