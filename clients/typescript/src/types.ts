/**
 * The public shapes: what `evaluate` takes, and the result in the JSON shape of the service's
 * REST door (`core`'s `to_dict()`), whichever transport carried it.
 *
 * Request objects (`options`, `model`, `baseline`, `challenger`) use the API's own field names
 * (snake case), as the REST JSON and the Python client do; `src/schema-check.ts` fails the
 * typecheck when they drift from the proto.
 */

import type { MonitorStates } from "./monitor-store.js";

export type Task = "binary" | "multiclass" | "multilabel" | "regression" | "detection";

/** A numeric column: one value per row. */
export type Column = Float64Array | readonly number[];
/** An n x k matrix, one row per sample (multiclass and multilabel scores, multilabel labels). */
export type Matrix = readonly Column[];
export type Values = Column | Matrix;
/** Ground truth: numbers (or a matrix), or class names for multiclass. */
export type Labels = Values | readonly string[];

/** Options tune the evaluation; an absent (or null) option takes the server's default. */
export interface Options {
  /** A score >= threshold is predicted positive (default 0.5). */
  readonly threshold?: number | null;
  /** F-beta weight of recall, > 0 (default 1). */
  readonly beta?: number | null;
  /** k of multiclass top-k accuracy (default 1 and 5). */
  readonly top_k?: readonly number[] | null;
  /** k of precision_at_{k} and recall_at_{k}, in units of sample weight. */
  readonly head_k?: readonly number[] | null;
  /** FPR bound of the McClish-standardized partial AUC, in (0, 1]. */
  readonly max_fpr?: number | null;
  /** Curves are thinned to at most this many points; 0 omits them (default 1000). */
  readonly max_curve_points?: number | null;
  /** Level of every interval, in (0, 1) (default 0.95). */
  readonly confidence_level?: number | null;
  /** Parameters of a regression model, for adjusted R2, AIC, BIC and Mallows' Cp. */
  readonly n_params?: number | null;
  /** Equal-width bins of the expected calibration error (default 10). */
  readonly calibration_bins?: number | null;
  /** DeLong interval of the ROC AUC: "logit" (default) or "wald" (as pROC). */
  readonly auc_interval?: "logit" | "wald" | null;
  /** Significance level of the drift test and the challenger comparison (default 0.05). */
  readonly alpha?: number | null;
  /** Fewest positives and negatives (each) for a drift or comparison verdict (default 20). */
  readonly drift_min_samples?: number | null;
  /** The AUC monitor's tolerance: a drop of at most this below the baseline's AUC is never
   * evidence (default 0.01). */
  readonly drift_tolerance?: number | null;
  /** The AUC monitor's promise: the expected windows before a false alarm, at least (default
   * 8760, a year of hourly windows). */
  readonly monitor_arl_windows?: number | null;
  /** Replicates of the bootstrap intervals; 0 (the default) skips them. */
  readonly bootstrap_replicates?: number | null;
  /** Seed of the bootstrap (default 0): the same request gives the same intervals. */
  readonly bootstrap_seed?: number | null;
  /** Regression: residual variance of the full model, for Mallows' Cp. */
  readonly full_model_variance?: number | null;
  /** Detection: the highest-scoring predictions kept per image (default 100, as COCO). */
  readonly max_detections?: number | null;
  /** Precision targets in (0, 1], at most 8: the highest recall whose precision reaches each
   * (`recall_at_precision_{p}`, its `_threshold`); read with `operatingPoint`. */
  readonly recall_at_precision?: readonly number[] | null;
  /** Recall targets in (0, 1], at most 8: the highest precision whose recall reaches each
   * (`precision_at_recall_{r}`, its `_threshold`). */
  readonly precision_at_recall?: readonly number[] | null;
  /** FPR bounds in [0, 1], at most 8: the highest TPR whose FPR stays within each
   * (`tpr_at_fpr_{f}`, its `_threshold`). */
  readonly tpr_at_fpr?: readonly number[] | null;
  /** Sensitivity targets in (0, 1], at most 8: the highest specificity whose sensitivity
   * reaches each (`specificity_at_sensitivity_{s}`, its `_threshold`). */
  readonly specificity_at_sensitivity?: readonly number[] | null;
  /** Alert budgets: shares of the rows (in sample weight) in (0, 1], at most 8; the lowest
   * threshold flagging at most each share, the share it flags, its precision and recall
   * (`flagged_share_{q}_threshold`, ...); read with `flaggedShare`. */
  readonly flagged_share?: readonly number[] | null;
  /** Regression: quantile levels in (0, 1), at most 8, of the pinball loss (`pinball_loss_{q}`). */
  readonly quantiles?: readonly number[] | null;
  /** With segments: each segment's curves thinned to at most this many points (default 0: none). */
  readonly segment_curve_points?: number | null;
  /** Binary: the label of the positive class, as scikit-learn's `pos_label`: labels equal to
   * it are positive, the rest negative, so labels may be names ("yes"/"no") or two numbers
   * other than 0/1; a number goes as its text ("2"). Hard predictions stay 0/1. */
  readonly positive_label?: string | null;
}

/** The evaluated model; a request that names one updates its Prometheus gauges. */
export interface Model {
  readonly name: string;
  readonly version?: string;
  readonly segment?: string;
}

/** The drift test's reference: a summary (AUC with its variance or class counts), or a
 * reference payload of labels and scores (and optional weights). */
export interface Baseline {
  readonly roc_auc?: number | null;
  readonly roc_auc_variance?: number | null;
  readonly n_positive?: number | null;
  readonly n_negative?: number | null;
  readonly labels?: Column | null;
  readonly scores?: Column | null;
  readonly weights?: Column | null;
}

/** How much of the evaluated window's predictions have their labels (labels arrive late). */
export interface Coverage {
  /** Predictions the model made in the window, labelled or not (at least the rows sent). */
  readonly n_predictions?: number | null;
  /** How late the labels arrive, in seconds (for example the median). */
  readonly label_delay_seconds?: number | null;
}

/** The request's coverage with the rows evaluated; absent keys were not sent. */
export interface CoverageReport {
  readonly n_predictions?: number;
  /** Rows evaluated (images for detection). */
  readonly n_labelled?: number;
  /** n_labelled / n_predictions. */
  readonly label_coverage?: number;
  readonly label_delay_seconds?: number;
}

/** A second model's scores on the same rows (paired comparison). */
export interface Challenger {
  readonly scores: Column;
}

/** One image of a detection evaluation: ground-truth boxes [x1, y1, x2, y2] and classes. */
export interface DetectionTarget {
  readonly boxes: Values;
  readonly classes: Column;
  readonly image_id?: string;
}

/** The predicted boxes of one image, their classes and scores. */
export interface DetectionPrediction {
  readonly boxes: Values;
  readonly classes: Column;
  readonly scores: Column;
}

/** The optional arguments of `evaluate`. */
export interface EvaluateOptions {
  /** Hard predictions; the predictions of a regression model. */
  readonly yPred?: Values | null;
  /** Non-negative sample weights. */
  readonly sampleWeight?: Column | null;
  readonly options?: Options | null;
  /** Class names in score-column order. */
  readonly classes?: readonly string[] | null;
  readonly model?: Model | null;
  readonly baseline?: Baseline | null;
  readonly challenger?: Challenger | null;
  /** The label coverage of the window: reported back in `result.coverage`. */
  readonly coverage?: Coverage | null;
  /**
   * The window's id for the AUC monitor (its end time, say): a window sent again is not
   * counted again. Without it a monitored call makes one, which its retries reuse.
   */
  readonly window?: string | null;
  /**
   * The segment of each row (of each image for detection), a country or a customer tier say:
   * the result then holds each segment's own result in `segments`. Or `segmentCodes` (an
   * integer a row) with `segmentNames` (the names they index). This client sends a segmented
   * request in one message, never streamed.
   */
  readonly segments?: readonly string[] | null;
  readonly segmentCodes?: readonly number[] | null;
  readonly segmentNames?: readonly string[] | null;
  /** Past the server's `max_segments` distinct segments, fold the smallest into one named
   * `__other__` (a warning names them) instead of refusing the request. */
  readonly foldSegments?: boolean | null;
  /** This call's deadline, instead of the client's `timeoutMs`. */
  readonly timeoutMs?: number;
}

// --- the result ------------------------------------------------------------------------------

export interface Interval {
  readonly lower: number;
  readonly upper: number;
  readonly level: number;
  /** "delong", "delong-logit", "wilson" or "bootstrap-percentile". */
  readonly method: string;
  readonly std_error: number;
  /** Bootstrap only. */
  readonly replicates?: number;
  readonly seed?: number;
}

/** The current metric against the baseline's (unpaired). Without a verdict (status
 * "insufficient_data" or "undefined") the test's numbers are null and `reason` says why. */
export interface DriftTest {
  readonly baseline: number;
  readonly delta: number | null;
  readonly z: number | null;
  readonly p_value: number | null;
  readonly significant: boolean | null;
  readonly method: string;
  readonly df: number | null;
  readonly std_error: number | null;
  readonly status: string;
  readonly reason: string | null;
}

/** The challenger's metric against the champion's on the same rows (paired). */
export interface Comparison {
  readonly challenger: number | null;
  readonly delta: number | null;
  readonly z: number | null;
  readonly p_value: number | null;
  readonly significant: boolean | null;
  readonly method: string;
  readonly std_error: number | null;
  readonly status: string;
  readonly reason: string | null;
  readonly df: number | null;
}

/** The AUC monitor after this window: its `statistic` against its `threshold` (`alarm` when
 * it reaches it), the `windows` that added evidence so far, this window's `evalue` (null when it
 * added none), and `status` "ok" or "insufficient_data" with its `reason`. */
export interface MonitorVerdict {
  readonly statistic: number;
  readonly threshold: number;
  readonly alarm: boolean;
  readonly windows: number;
  readonly evalue: number | null;
  readonly status: string;
  readonly reason: string | null;
}

/** One class's row: its metrics side by side with `class`, `undefined` and `intervals`
 * (read them with `classMetrics(row)`). */
export interface ClassRow {
  readonly class: string;
  readonly undefined: Readonly<Record<string, string>>;
  readonly intervals: Readonly<Record<string, Interval>>;
  readonly [metric: string]:
    | number
    | null
    | string
    | Readonly<Record<string, string>>
    | Readonly<Record<string, Interval>>;
}

/** A curve or matrix: named arrays; a non-finite value (the +inf start of a threshold list)
 * is null. */
export type Curve = Readonly<Record<string, readonly (number | null)[]>>;

/** One evaluation, in the JSON shape of the REST door. */
export interface EvaluationResult {
  readonly task: Task;
  readonly n_samples: number;
  /** Every metric; an undefined one is null, with its reason in `undefined`. */
  readonly metrics: Readonly<Record<string, number | null>>;
  readonly undefined: Readonly<Record<string, string>>;
  readonly per_class: readonly ClassRow[];
  readonly curves: Readonly<Record<string, Curve>>;
  readonly intervals: Readonly<Record<string, Interval>>;
  readonly drift: Readonly<Record<string, DriftTest>>;
  readonly comparison: Readonly<Record<string, Comparison>>;
  readonly conventions: Readonly<Record<string, string>>;
  readonly warnings: readonly string[];
  /** {} unless the request had `coverage`. */
  readonly coverage: CoverageReport;
  /** The AUC monitor's verdict by metric (with a baseline; `monitor.roc_auc`). */
  readonly monitor: Readonly<Record<string, MonitorVerdict>>;
  /** The monitor's next state, base64 (null without a baseline): the client keeps it for the
   * model and sends it with the model's next window. */
  readonly monitor_state: string | null;
  /** The client's, on a monitored call (binary, with a model and a baseline): the window id
   * sent, the caller's or one the client made. */
  readonly window?: string;
  /** The client's, on a monitored call: why it started a new monitor for a model that had one
   * (a new baseline or new options, or a stored state the server refused), else null. */
  readonly monitor_restarted?: string | null;
  /** With segments in the request: each segment's own result by name, as a request of its
   * rows alone would answer (with its own `monitor` and `monitor_state`); absent otherwise. */
  readonly segments?: Readonly<Record<string, EvaluationResult>>;
}

/** The closed interval every defined value of a metric lies in; null is an unbounded end. */
export interface MetricRange {
  readonly lower: number | null;
  readonly upper: number | null;
}

/**
 * One metric of one task in the catalog (`GET /v1/metrics`, `ListMetrics`): (task, name) is
 * unique, and a name two tasks share has an entry in each, with that task's definition.
 */
export interface MetricInfo {
  /** A template such as `precision_at_{k}` stands for every `precision_at_<k>` of a result. */
  readonly name: string;
  /** `[task]`, kept from the first version of the catalog. */
  readonly tasks: readonly Task[];
  /** True when larger is better, false when smaller is; null for counts and thresholds. */
  readonly higher_is_better: boolean | null;
  readonly definition: string;
  readonly aliases: readonly string[];
  readonly task: Task;
  /** Null from a server of the catalog's first version. */
  readonly range: MetricRange | null;
  /** Where references disagree, the choice made: `key: text; ...` (keys of `conventions`). */
  readonly convention: string;
  /** What the value is checked against (scikit-learn, pROC, pycocotools, a worked example). */
  readonly reference: string;
  /** The pytest node id of the server's test that checks it. */
  readonly test: string;
}

/** The options of `listMetrics`. */
export interface ListMetricsOptions {
  /** Only this task's metrics (default: every task's). */
  readonly task?: Task;
  /** Deadline of each attempt, in milliseconds (default: the client's `timeoutMs`). */
  readonly timeoutMs?: number;
}

/** The settings of a client. */
export interface ClientOptions {
  /** Deadline of each attempt of a call, in milliseconds (default 60 000). */
  readonly timeoutMs?: number;
  /** Retries of a call that found the server unavailable (default 3). */
  readonly retries?: number;
  /**
   * Full-jitter backoff: retry n waits a random time up to `min(maxBackoffMs, backoffMs * 2^n)`,
   * and at least the server's `Retry-After` / `RetryInfo` when it sent one (default 200 ms).
   */
  readonly backoffMs?: number;
  /** The largest ceiling of a retry's random wait (default 5 000 ms). */
  readonly maxBackoffMs?: number;
  /**
   * No retry starts later than this after a call's first attempt (default 30 000 ms): a call
   * lasts at most about `retryDeadlineMs + timeoutMs`.
   */
  readonly retryDeadlineMs?: number;
  /**
   * An input larger than this is streamed, whatever its task (default 1 000 000). Sizes count
   * values of the widest column: rows (binary, regression), rows times classes (multiclass and
   * multilabel matrices), boxes (detection: ground truth and predicted, at least 1 an image).
   */
  readonly streamThreshold?: number;
  /**
   * The size of a stream's batch, in the unit of `streamThreshold` (default 250 000): whole rows
   * (matrices split on row boundaries), or whole images for detection; at least one each.
   */
  readonly chunkRows?: number;
  /**
   * Headers sent with every call (a gateway's authorization, a request id): HTTP headers over
   * REST, call metadata over gRPC (names are lowercased).
   */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * PEM certificates of the CAs to trust instead of Node's, for `grpcs://` targets (a server
   * with a private CA). For `https://` REST targets, start Node with NODE_EXTRA_CA_CERTS.
   */
  readonly ca?: string;
  /**
   * Where the AUC monitor's state of each model is kept between calls: a `MonitorStates`, or
   * the path of its JSON file (default: in memory, for the client's life).
   */
  readonly monitorStates?: MonitorStates | string;
}

/** The values of a class row's metrics, null where undefined. */
export function classMetrics(row: ClassRow): Record<string, number | null> {
  const metrics: Record<string, number | null> = {};
  for (const [key, value] of Object.entries(row)) {
    if (typeof value === "number" || value === null) {
      metrics[key] = value;
    }
  }
  return metrics;
}
