/**
 * One neutral request, built once from `evaluate`'s arguments and encoded by either transport:
 * flat float64 columns (matrices row-major, their width in `nClasses`), string labels in
 * `labelNames`, the rest as given.
 *
 * A stream (every task) is a header, then batches of whole rows, or of whole images for
 * detection. Its size is counted in values of the widest column, so a batch weighs about the
 * same whatever the task: a row counts 1 (binary, regression) or its class count (a row of a
 * multiclass or multilabel matrix), an image its boxes, ground truth and predicted (at least 1).
 * The stream threshold and the batch size are in that unit; a batch holds at least one row or
 * image.
 */

import { InvalidArgument } from "./errors.js";
import { floats, flatten } from "./f64.js";
import { OptionsSchema } from "./gen/evalserve/v1/evaluation_pb.js";
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

/** The columns that hold an n x k matrix, per task (the others hold one value a row). */
const MATRIX_COLUMNS: Partial<Record<Task, readonly ColumnName[]>> = {
  multiclass: ["scores"],
  multilabel: ["labels", "scores", "predictions"],
};

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
  /** The width of a matrix given as rows (`number[][]`), sent in the request as `n_classes`. */
  readonly nClasses: number | null;
  /** Rows; images for detection. */
  readonly nRows: number;
  /** The values a row of each column holds (1, or the class count of a matrix). */
  readonly widths: Partial<Record<ColumnName, number>>;
  /**
   * The class count of the task's matrices when known (from a matrix given as rows, the class
   * names, or for multiclass the ratio of scores to labels): a stream's header carries it as
   * `n_classes`, and its batches split the matrices on row boundaries.
   */
  readonly width: number | null;
  readonly classes: readonly string[] | null;
  readonly options: Options | null;
  readonly model: Model | null;
  readonly baseline: Baseline | null;
  readonly coverage: Coverage | null;
  readonly challenger: Challenger | null;
  readonly images: readonly Image[] | null;
  /** The AUC monitor's state from the model's last window (base64), and this window's id. */
  readonly monitorState: string | null;
  readonly window: string | null;
  /** The segment of each row as names, or as codes into `segmentNames`; null when absent. */
  readonly segments: readonly string[] | null;
  readonly segmentCodes: readonly number[] | null;
  readonly segmentNames: readonly string[] | null;
  readonly foldSegments: boolean;
  /** Each segment's monitor state from its last window (base64), by name. */
  readonly segmentMonitorStates: Readonly<Record<string, string>> | null;
}

/** Whether the request names segments (then it is sent in one message). */
export function segmented(request: Request): boolean {
  return (
    (request.segments?.length ?? 0) > 0 ||
    (request.segmentCodes?.length ?? 0) > 0 ||
    (request.segmentNames?.length ?? 0) > 0
  );
}

/** How the server (Python) prints a non-finite number in its messages. */
function pythonFloat(value: number): string {
  return Number.isNaN(value) ? "nan" : value > 0 ? "inf" : "-inf";
}

/**
 * The options without their null (default) entries. A non-finite number, alone or in a list,
 * is refused here, with the server's message: JSON has no infinity (JSON.stringify would send
 * null). A single number given to a list option (from JavaScript) is sent as a list of one, as
 * the server reads it: gRPC could not carry it otherwise.
 */
function setOptions(options: Options | null | undefined): Options | null {
  if (options == null) {
    return null;
  }
  const kept: [string, unknown][] = [];
  for (const [key, given] of Object.entries(options)) {
    if (given == null) {
      continue;
    }
    const field = OptionsSchema.fields.find((f) => f.name === key);
    const list = field?.fieldKind === "list";
    const value: unknown = list && typeof given === "number" ? [given] : given;
    const items: readonly unknown[] = Array.isArray(value) ? value : [value];
    for (const item of items) {
      if (typeof item === "number" && !Number.isFinite(item)) {
        throw new InvalidArgument(`expected a finite number, but got ${pythonFloat(item)}`, {
          field: `options.${key}`,
          code: "invalid_argument",
        });
      }
    }
    kept.push([key, value]);
  }
  return Object.fromEntries(kept) as Options;
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

/** The size of each image in a stream: its boxes, ground truth and predicted, at least 1 (so a
 * batch of images without boxes stays bounded too). */
export function imageSizes(images: readonly Image[]): number[] {
  return images.map((image) =>
    Math.max(1, Math.floor((image.gt_boxes.length + image.pred_boxes.length) / 4)),
  );
}

/** What the stream threshold counts: values of the widest column, or boxes. */
export function streamSize(request: Request): number {
  if (request.images !== null) {
    return imageSizes(request.images).reduce((sum, size) => sum + size, 0);
  }
  return request.nRows * rowSize(request);
}

/** The values of a row of the widest column. */
function rowSize(request: Request): number {
  return Math.max(1, ...Object.values(request.widths));
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
    monitorState: null,
    window: opts.window ?? null,
    segments: opts.segments ?? null,
    segmentCodes: opts.segmentCodes ?? null,
    segmentNames: opts.segmentNames ?? null,
    foldSegments: opts.foldSegments ?? false,
    segmentMonitorStates: null,
  };
}

export function detectionRequest(
  yTrue: readonly DetectionTarget[],
  yScore: readonly DetectionPrediction[],
  opts: EvaluateOptions,
): Request {
  const given = images(yTrue, yScore);
  return {
    ...header("detection", opts),
    columns: {},
    labelNames: null,
    nClasses: null,
    nRows: given.length,
    widths: {},
    width: null,
    images: given,
  };
}

export function rowsRequest(
  task: Task,
  yTrue: Labels,
  yScore: Values | null | undefined,
  opts: EvaluateOptions,
): Request {
  const columns: Partial<Record<ColumnName, Float64Array>> = {};
  const asRows: Partial<Record<ColumnName, number>> = {};
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
      if (width !== null) {
        asRows[name] = width;
      }
    }
  }
  const shape = rowShape(task, columns, labelNames, asRows, nClasses, opts.classes ?? null);
  return { ...header(task, opts), columns, labelNames, nClasses, ...shape, images: null };
}

/** The rows, the matrices' width and each column's values a row (see `Request`). */
function rowShape(
  task: Task,
  columns: Request["columns"],
  labelNames: readonly string[] | null,
  asRows: Partial<Record<ColumnName, number>>,
  nClasses: number | null,
  classes: readonly string[] | null,
): Pick<Request, "nRows" | "width" | "widths"> {
  const matrices = MATRIX_COLUMNS[task] ?? [];
  let width = nClasses ?? (matrices.length > 0 && classes !== null ? classes.length : null);
  const labels = columns.labels;
  const labelWidth = asRows.labels ?? (matrices.includes("labels") && width ? width : 1);
  const nRows =
    labelNames !== null
      ? labelNames.length
      : Math.floor((labels?.length ?? 0) / Math.max(1, labelWidth));
  const scores = columns.scores;
  if (width === null && task === "multiclass" && scores !== undefined && nRows > 0) {
    const ratio = scores.length / nRows; // the server's reading of flat scores
    width = Number.isInteger(ratio) && ratio > 1 ? ratio : null;
  }
  const widths: Partial<Record<ColumnName, number>> = {};
  for (const name of COLUMNS) {
    if (columns[name] !== undefined) {
      widths[name] = asRows[name] ?? (matrices.includes(name) && width ? width : 1);
    }
  }
  return { nRows, width: matrices.length > 0 ? width : null, widths };
}

/**
 * The batches of a stream, as [start, stop) of rows, or of images for detection: each of at
 * most `chunkSize` values of the widest column (boxes), and at least one row or image.
 */
export function* chunks(request: Request, chunkSize: number): Generator<[number, number]> {
  if (request.images !== null) {
    yield* packed(imageSizes(request.images), chunkSize);
    return;
  }
  const step = Math.max(1, Math.floor(chunkSize / rowSize(request)));
  for (let start = 0; start < request.nRows; start += step) {
    yield [start, Math.min(start + step, request.nRows)];
  }
}

/** Consecutive [start, stop) of items whose sizes sum to at most `chunkSize`; an item larger
 * than that goes alone. */
function* packed(sizes: readonly number[], chunkSize: number): Generator<[number, number]> {
  let start = 0;
  let filled = 0;
  for (const [index, size] of sizes.entries()) {
    if (index > start && filled + size > chunkSize) {
      yield [start, index];
      start = index;
      filled = 0;
    }
    filled += size;
  }
  if (start < sizes.length) {
    yield [start, sizes.length];
  }
}

/** The rows [start, stop) of every column (views, no copies): a matrix's whole rows. */
export function rowSlice(request: Request, start: number, stop: number): Request["columns"] {
  const sliced: Partial<Record<ColumnName, Float64Array>> = {};
  for (const name of COLUMNS) {
    const values = request.columns[name];
    if (values !== undefined) {
      const width = request.widths[name] ?? 1;
      sliced[name] = values.subarray(start * width, stop * width);
    }
  }
  return sliced;
}

/** The header's `n_classes`: a one-shot request's as given (a matrix of rows); a stream's
 * whenever the width of its matrices is known, as its batches hold flat rows. */
export function headerClasses(request: Request, stream: boolean): number | null {
  return request.nClasses !== null || !stream ? request.nClasses : request.width;
}
