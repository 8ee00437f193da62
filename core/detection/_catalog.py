"""The detection metrics' catalog entries and the conventions every detection result states.

Each entry names its reference (what the value is checked against) and the test that checks
it; ``tests/core/test_catalog.py`` fails when the test is missing or does not name the metric.
"""

from __future__ import annotations

from evalserve.core._metric_info import COUNT, UNIT, MetricInfo, entry_builder

__all__ = ["CATALOG_ENTRIES", "CLASS_METRICS", "CONVENTIONS", "MEAN_METRICS", "METRIC_NAMES"]


# Top-level mean -> the per-class metric it averages (macro over classes with ground truth).
MEAN_METRICS = {
    "map": "ap",
    "map_50": "ap_50",
    "map_75": "ap_75",
    "ap_50_voc11": "ap_50_voc11",
    "ap_50_voc_all": "ap_50_voc_all",
    "recall_50": "recall_50",
    "map_small": "ap_small",
    "map_medium": "ap_medium",
    "map_large": "ap_large",
    "mar_1": "ar_1",
    "mar_10": "ar_10",
    "mar_100": "ar_100",
    "mar_small": "ar_small",
    "mar_medium": "ar_medium",
    "mar_large": "ar_large",
}
# The per-class metrics that are null for a class without ground truth.
CLASS_METRICS = tuple(MEAN_METRICS.values())

CONVENTIONS: dict[str, str] = {
    "box_format": "[x1, y1, x2, y2] (COCO's [x, y, w, h] converted by the caller)",
    "iou": "box IoU, area = (x2 - x1)(y2 - y1), no +1 pixel (COCO; the VOC devkit adds 1)",
    "iou_threshold": (
        "IoU >= threshold is a hit, as pycocotools (the VOC paper and its Python devkit use >)"
    ),
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
        "class; the two agree when no image has more predictions than the limit. mar_1 and "
        "mar_10 count the 1 and 10 highest-scoring kept predictions of each image and class "
        "(pycocotools' maxDets = [1, 10, max_detections], so never more than max_detections); "
        "mar_100, the area ranges and every AP count all kept predictions: like pycocotools' "
        "stats[0] and stats[8] with maxDets[2] = max_detections, they follow max_detections "
        "(100 by default)"
    ),
    "map": (
        "COCO: AP at IoU 0.50:0.05:0.95 with precision interpolated at 101 recall points "
        "(np.linspace(0, 1, 101), compared in floating point as pycocotools), then averaged. "
        "AR (mar_*): the recall of the counted predictions at each of those IoU thresholds, "
        "averaged over them (Hosang et al. 2016; pycocotools' stats[6:12]), then over the classes"
    ),
    "ap_50_voc11": "VOC 2007 11-point: max precision at recall >= r, r = 0, .1, ..., 1 (exact)",
    "ap_50_voc_all": "VOC 2010+: area under the monotone precision envelope",
    "recall_50": "recall at IoU 0.5 with all kept predictions (COCO matching)",
    "classes": (
        "means are macro over classes with ground truth; a class without ground truth has null "
        "metrics and is left out (COCO's rule); a class with ground truth and no predictions "
        "counts with AP 0. In an area range only the classes with ground truth in that range "
        "count (pycocotools' -1 entries)"
    ),
    "crowd_difficult": "not supported: every ground truth box counts (no iscrowd, no difficult)",
    "area_ranges": (
        "COCO's (pycocotools' areaRng): small [0, 32^2], medium [32^2, 96^2], large [96^2, "
        "1e10] on the box area (x2 - x1)(y2 - y1), bounds included (an area of exactly 32^2 is "
        "small and medium). In a range the ground truth outside it is ignored: a prediction "
        "takes a free box inside the range first, else one outside; a prediction matched to a "
        "box outside the range, or unmatched and itself outside it, neither counts nor costs. "
        "COCO's annotations carry the segment's area: compare with pycocotools given w * h"
    ),
    "undefined": "null with a reason in `undefined`, never 0 or NaN",
}

_m = entry_builder("detection", CONVENTIONS)
_AREAS = (("small", "[0, 32^2]"), ("medium", "[32^2, 96^2]"), ("large", "[96^2, 1e10]"))

# The tests that check the entries (pytest node ids are paths from the repository root).
_DT = "tests/core/test_detection.py::"
_COUNTS = _DT + "test_no_ground_truth_anywhere_leaves_the_means_undefined"
_COCO = _DT + "test_coco_metrics_match_pycocotools"
_VOC = _DT + "test_voc_eleven_point_and_all_point_by_hand"
_COCOEVAL = (
    "pycocotools' COCOeval (iouType bbox, area range all, maxDets = options.max_detections) "
    "on random scenes with overlapping boxes, duplicates and classes without ground truth"
)
_SUMMARY = _DT.replace("test_detection.py", "test_detection_coco_summary.py")
_SUMMARY_TEST = _SUMMARY + "test_coco_summary_matches_pycocotools"
_COCOEVAL_SUMMARY = (
    "pycocotools' COCOeval (iouType bbox, maxDets [1, 10, options.max_detections], areaRng "
    "all/small/medium/large) on random scenes with boxes of every size, areas on the range "
    "bounds, overlapping boxes and duplicates, and on Hypothesis-generated scenes"
)
_COCO_CONVENTIONS = (
    "matching", "iou_threshold", "score_ties", "max_detections", "classes", "undefined",
)  # fmt: skip

CATALOG_ENTRIES: tuple[MetricInfo, ...] = (
    _m(
        "n_images", None, COUNT, "Number of images received.",
        reference="the number of images of the request", test=_COUNTS,
    ),
    _m(
        "n_ground_truth", None, COUNT, "Ground truth boxes received, all images and classes.",
        conventions=("crowd_difficult",),
        reference="the number of ground truth boxes of the request", test=_COUNTS,
    ),
    _m(
        "n_predictions", None, COUNT,
        "Predicted boxes received, before the options.max_detections cut per image.",
        conventions=("max_detections",),
        reference="the number of predicted boxes of the request, counted before the cut",
        test=_DT + "test_max_detections_keeps_the_top_of_each_image_over_all_classes",
    ),
    _m(
        "map", True, UNIT,
        "COCO mAP: mean over IoU 0.50:0.05:0.95 and over classes with ground truth of the AP "
        "interpolated at 101 recall points (pycocotools, area all, maxDets = "
        "options.max_detections per image).",
        aliases=("map_50_95",), conventions=("map", *_COCO_CONVENTIONS),
        reference=_COCOEVAL + ": stats[0]", test=_COCO,
    ),
    _m(
        "map_50", True, UNIT,
        "COCO AP at IoU 0.5 (101-point), mean over classes with ground truth.",
        conventions=("map", *_COCO_CONVENTIONS),
        reference=_COCOEVAL + ": stats[1]", test=_COCO,
    ),
    _m(
        "map_75", True, UNIT,
        "COCO AP at IoU 0.75 (101-point), mean over classes with ground truth.",
        conventions=("map", *_COCO_CONVENTIONS),
        reference=_COCOEVAL + ": stats[2]", test=_COCO,
    ),
    _m(
        "ap_50_voc11", True, UNIT,
        "VOC 2007 11-point AP at IoU 0.5: mean of max precision at recall >= r, "
        "r = 0, .1, ..., 1; VOC matching; mean over classes with ground truth.",
        conventions=("ap_50_voc11", "matching", "iou_threshold", "score_ties", "classes",
                     "undefined"),
        reference="PASCAL VOC 2007's 11-point AP (Everingham et al. 2010) by hand on a "
        "five-box ranking, 83/165; the 15-image precision-recall worked example, 31/33",
        test=_VOC,
    ),
    _m(
        "ap_50_voc_all", True, UNIT,
        "VOC 2010+ all-point AP at IoU 0.5: area under the monotone precision envelope; "
        "VOC matching; mean over classes with ground truth.",
        conventions=("ap_50_voc_all", "matching", "iou_threshold", "score_ties", "classes",
                     "undefined"),
        reference="PASCAL VOC 2010's all-point AP (Everingham et al. 2010) by hand on a "
        "five-box ranking, 34/75; the 15-image precision-recall worked example, 59/63",
        test=_VOC,
    ),
    _m(
        "recall_50", True, UNIT,
        "Share of ground truth boxes matched at IoU 0.5 by the kept predictions (COCO matching; "
        "COCO AR at one threshold), mean over classes with ground truth.",
        conventions=("recall_50", *_COCO_CONVENTIONS),
        reference=_COCOEVAL + ": eval['recall'] at IoU 0.5, averaged over the classes",
        test=_COCO,
    ),
    *(
        _m(
            f"map_{area}", True, UNIT,
            f"COCO AP (IoU 0.50:0.05:0.95, 101 recall points) of the {area} boxes, area in "
            f"{bounds}, mean over the classes with {area} ground truth (pycocotools' AP{area[0]}, "
            "maxDets = options.max_detections per image).",
            conventions=("map", "area_ranges", *_COCO_CONVENTIONS),
            reference=_COCOEVAL_SUMMARY + f": stats[{3 + index}]", test=_SUMMARY_TEST,
        )
        for index, (area, bounds) in enumerate(_AREAS)
    ),
    _m(
        "mar_1", True, UNIT,
        "COCO average recall with the highest-scoring prediction of each image and class: "
        "recall averaged over IoU 0.50:0.05:0.95, mean over classes with ground truth "
        "(pycocotools' AR@1).",
        conventions=("map", *_COCO_CONVENTIONS),
        reference=_COCOEVAL_SUMMARY + ": stats[6]", test=_SUMMARY_TEST,
    ),
    _m(
        "mar_10", True, UNIT,
        "COCO average recall with the 10 highest-scoring predictions of each image and class "
        "(at most options.max_detections): recall averaged over IoU 0.50:0.05:0.95, mean over "
        "classes with ground truth (pycocotools' AR@10).",
        conventions=("map", *_COCO_CONVENTIONS),
        reference=_COCOEVAL_SUMMARY + ": stats[7]", test=_SUMMARY_TEST,
    ),
    _m(
        "mar_100", True, UNIT,
        "COCO average recall with all kept predictions (options.max_detections per image, 100 "
        "by default): recall averaged over IoU 0.50:0.05:0.95, mean over classes with ground "
        "truth (pycocotools' AR@100, maxDets[2] = options.max_detections).",
        conventions=("map", *_COCO_CONVENTIONS),
        reference=_COCOEVAL_SUMMARY + ": stats[8]", test=_SUMMARY_TEST,
    ),
    *(
        _m(
            f"mar_{area}", True, UNIT,
            f"COCO average recall of the {area} boxes, area in {bounds}, with all kept "
            "predictions: recall averaged over IoU 0.50:0.05:0.95, mean over the classes with "
            f"{area} ground truth (pycocotools' AR{area[0]}).",
            conventions=("map", "area_ranges", *_COCO_CONVENTIONS),
            reference=_COCOEVAL_SUMMARY + f": stats[{9 + index}]", test=_SUMMARY_TEST,
        )
        for index, (area, bounds) in enumerate(_AREAS)
    ),
)  # fmt: skip

METRIC_NAMES = tuple(entry.name for entry in CATALOG_ENTRIES)
