/**
 * One neutral request, built once from `evaluate`'s arguments and encoded by either transport:
 * flat float64 columns (matrices row-major, their width in `nClasses`), string labels in
 * `labelNames`, the rest as given.
 */

import { InvalidArgument } from "./errors.js";
import { floats, flatten } from "./f64.js";
import type {
  Baseline,
  Challenger,
  Column,
  Coverage,
  DetectionPrediction,
  DetectionTarget,
  EvaluateOptions,
  Labels,
  Model,
  Options,
  Task,
  Values,
} from "./types.js";

export const COLUMNS = ["labels", "scores", "predictions", "weights"] as const;
export type ColumnName = (typeof COLUMNS)[number];

/** A detection image with flat boxes ([x1, y1, x2, y2] row-major). */
export interface Image {
  readonly image_id: string;
  readonly gt_boxes: Float64Array;
  readonly gt_classes: Float64Array;
  readonly pred_boxes: Float64Array;
  readonly pred_classes: Float64Array;
  readonly pred_scores: Float64Array;
}

export interface Request {
  readonly task: Task;
  readonly columns: Partial<Record<ColumnName, Float64Array>>;
  readonly labelNames: readonly string[] | null;
  readonly nClasses: number | null;
  readonly nRows: number;
  readonly classes: readonly string[] | null;
  readonly options: Options | null;
  readonly model: Model | null;
  readonly baseline: Baseline | null;
  readonly coverage: Coverage | null;
  readonly challenger: Challenger | null;
  readonly images: readonly Image[] | null;
}

/** How the server (Python) prints a non-finite number in its messages. */
function pythonFloat(value: number): string {
  return Number.isNaN(value) ? "nan" : value > 0 ? "inf" : "-inf";
}

/**
 * The options without their null (default) entries. A non-finite number is refused here, with
 * the server's message: JSON has no infinity (JSON.stringify would send null, the default).
 */
function setOptions(options: Options | null | undefined): Options | null {
  if (options == null) {
    return null;
  }
  const kept = Object.entries(options).filter(([, value]) => value != null);
  for (const [key, value] of kept) {
    if (typeof value === "number" && !Number.isFinite(value)) {
      throw new InvalidArgument(`expected a finite number, but got ${pythonFloat(value)}`, {
        field: `options.${key}`,
        code: "invalid_argument",
      });
    }
  }
  return Object.fromEntries(kept);
}

function isNames(labels: Labels): labels is readonly string[] {
  return !(labels instanceof Float64Array) && typeof labels[0] === "string";
}

function images(
  targets: readonly DetectionTarget[],
  predictions: readonly DetectionPrediction[],
): Image[] {
  if (targets.length !== predictions.length) {
    throw new InvalidArgument(
      `expected one prediction per image, but got ${targets.length} targets and ` +
        `${predictions.length} predictions`,
      { field: "images", code: "invalid_argument" },
    );
  }
  return targets.map((target, index) => {
    const predicted = predictions[index] as DetectionPrediction;
    return {
      image_id: target.image_id ?? String(index),
      gt_boxes: flatten(target.boxes, `images[${index}].gt_boxes`).flat,
      gt_classes: floats(target.classes),
      pred_boxes: flatten(predicted.boxes, `images[${index}].pred_boxes`).flat,
      pred_classes: floats(predicted.classes),
      pred_scores: floats(predicted.scores),
    };
  });
}

function header(task: Task, opts: EvaluateOptions) {
  return {
    task,
    classes: opts.classes ?? null,
    options: setOptions(opts.options),
    model: opts.model ?? null,
    baseline: opts.baseline ?? null,
    challenger: opts.challenger ?? null,
    coverage: opts.coverage ?? null,
  };
}

export function detectionRequest(
  yTrue: readonly DetectionTarget[],
  yScore: readonly DetectionPrediction[],
  opts: EvaluateOptions,
): Request {
  return {
    ...header("detection", opts),
    columns: {},
    labelNames: null,
    nClasses: null,
    nRows: 0,
    images: images(yTrue, yScore),
  };
}

export function rowsRequest(
  task: Task,
  yTrue: Labels,
  yScore: Values | null | undefined,
  opts: EvaluateOptions,
): Request {
  const columns: Partial<Record<ColumnName, Float64Array>> = {};
  let nClasses: number | null = null;
  let labelNames: readonly string[] | null = null;
  const given: [ColumnName, Values | null | undefined][] = [
    ["labels", isNames(yTrue) ? null : (yTrue as Values)],
    ["scores", yScore],
    ["predictions", opts.yPred],
    ["weights", opts.sampleWeight as Column | null | undefined],
  ];
  if (isNames(yTrue)) {
    labelNames = yTrue;
  }
  for (const [name, values] of given) {
    if (values != null) {
      const { flat, width } = flatten(values, name);
      columns[name] = flat;
      nClasses = width ?? nClasses;
    }
  }
  return {
    ...header(task, opts),
    columns,
    labelNames,
    nClasses,
    nRows: yTrue.length,
    images: null,
  };
}

/** Row slices of a stream: [start, stop) of at most `chunkRows` rows. */
export function* chunks(nRows: number, chunkRows: number): Generator<[number, number]> {
  for (let start = 0; start < nRows; start += chunkRows) {
    yield [start, Math.min(start + chunkRows, nRows)];
  }
}

/** The rows [start, stop) of every column (views, no copies). */
export function rowSlice(request: Request, start: number, stop: number): Request["columns"] {
  const width = request.nClasses ?? 1;
  const sliced: Partial<Record<ColumnName, Float64Array>> = {};
  for (const name of COLUMNS) {
    const values = request.columns[name];
    if (values !== undefined) {
      sliced[name] = values.subarray(start * width, stop * width);
    }
  }
  return sliced;
}
