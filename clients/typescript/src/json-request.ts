/**
 * The neutral request as JSON for REST: one `POST /v1/evaluate` body, or NDJSON lines for
 * `POST /v1/evaluate/stream` (the header line first, then one line per batch of rows, or of
 * images for detection, as `chunks` cuts them). Numeric columns
 * travel as base64 `*_f64` text, as the Python client sends them: exact, compact, and NaN and
 * infinity reach the server's validation (JSON has neither).
 */

import { f64Base64, floats } from "./f64.js";
import { chunks, COLUMNS, headerClasses, rowSlice, type Image, type Request } from "./request.js";
import type { Column } from "./types.js";

type Json = Record<string, unknown>;

function isColumn(value: unknown): value is Column {
  return value instanceof Float64Array || Array.isArray(value);
}

/** A baseline or challenger: its columns as base64 `*_f64`, numbers as given. */
function payload(values: object): Json {
  const body: Json = {};
  for (const [key, value] of Object.entries(values)) {
    if (value == null) {
      continue;
    }
    if (isColumn(value)) {
      body[`${key}_f64`] = f64Base64(floats(value));
    } else {
      body[key] = value;
    }
  }
  return body;
}

function header(request: Request, stream: boolean): Json {
  const body: Json = { task: request.task };
  if (request.classes !== null) {
    body["classes"] = request.classes;
  }
  if (request.options !== null) {
    body["options"] = request.options;
  }
  if (request.model !== null) {
    body["model"] = request.model;
  }
  const nClasses = headerClasses(request, stream);
  if (nClasses !== null) {
    body["n_classes"] = nClasses;
  }
  if (request.baseline !== null) {
    body["baseline"] = payload(request.baseline);
  }
  if (request.coverage !== null) {
    body["coverage"] = Object.fromEntries(
      Object.entries(request.coverage).filter(([, value]) => value != null),
    );
  }
  if (request.monitorState !== null) {
    body["monitor_state"] = request.monitorState;
  }
  if (request.window !== null) {
    body["window"] = request.window;
  }
  return body;
}

function rows(columns: Request["columns"], labelNames: readonly string[] | null): Json {
  const body: Json = {};
  for (const name of COLUMNS) {
    const values = columns[name];
    if (values !== undefined) {
      body[`${name}_f64`] = f64Base64(values);
    }
  }
  if (labelNames !== null) {
    body["labels"] = labelNames;
  }
  return body;
}

/** Boxes [x1, y1, x2, y2] as rows of four. */
function boxes(flat: Float64Array): number[][] {
  const out: number[][] = [];
  for (let start = 0; start < flat.length; start += 4) {
    out.push(Array.from(flat.subarray(start, start + 4)));
  }
  return out;
}

function images(given: readonly Image[]): Json[] {
  return given.map((image) => ({
    image_id: image.image_id,
    gt_boxes: boxes(image.gt_boxes),
    gt_classes: Array.from(image.gt_classes),
    pred_boxes: boxes(image.pred_boxes),
    pred_classes: Array.from(image.pred_classes),
    pred_scores: Array.from(image.pred_scores),
  }));
}

export function toJson(request: Request): Json {
  const body: Json = { ...header(request, false), ...rows(request.columns, request.labelNames) };
  if (request.challenger !== null) {
    body["challenger"] = payload(request.challenger);
  }
  if (request.images !== null) {
    body["images"] = images(request.images);
  }
  return { ...body, ...segmentFields(request) };
}

/** The segment fields of a one-shot body (an empty list is an absent field, not sent). */
function segmentFields(request: Request): Json {
  const body: Json = {};
  for (const [key, value] of [
    ["segments", request.segments],
    ["segment_codes", request.segmentCodes],
    ["segment_names", request.segmentNames],
  ] as const) {
    if (value !== null && value.length > 0) {
      body[key] = value;
    }
  }
  if (request.foldSegments) {
    body["fold_segments"] = true;
  }
  const states = request.segmentMonitorStates;
  if (states !== null && Object.keys(states).length > 0) {
    body["segment_monitor_states"] = states;
  }
  return body;
}

/** The NDJSON lines of a stream: the header, then one line per batch (rows or images). */
export function* toNdjson(request: Request, chunkRows: number): Generator<string> {
  yield `${JSON.stringify(header(request, true))}\n`;
  for (const [start, stop] of chunks(request, chunkRows)) {
    if (request.images !== null) {
      yield `${JSON.stringify({ images: images(request.images.slice(start, stop)) })}\n`;
      continue;
    }
    const names = request.labelNames === null ? null : request.labelNames.slice(start, stop);
    yield `${JSON.stringify(rows(rowSlice(request, start, stop), names))}\n`;
  }
}
