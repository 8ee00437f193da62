/**
 * The neutral request as protobuf messages for gRPC: one `EvaluateRequest`, or an
 * `EvaluateStreamRequest` stream (the header first, then batches of rows, or of images for
 * detection, as `chunks` cuts them). Every numeric column
 * travels as raw little-endian `*_f64` bytes, as the Python client sends them.
 */

import {
  create,
  ScalarType,
  type DescField,
  type DescMessage,
  type MessageInitShape,
  type MessageShape,
} from "@bufbuild/protobuf";

import { InvalidArgument } from "./errors.js";
import { f64Bytes, floats } from "./f64.js";
import {
  BaselineSchema,
  CoverageSchema,
  ChallengerSchema,
  DetectionImageSchema,
  EvaluateRequestSchema,
  EvaluateStreamRequestSchema,
  ModelSchema,
  OptionsSchema,
  StreamHeaderSchema,
  Task as ProtoTaskValue,
  TaskSchema,
  type DetectionImage,
  type EvaluateRequest,
  type EvaluateStreamRequest,
  type StreamHeader,
  type Task as ProtoTask,
} from "./gen/evalserve/v1/evaluation_pb.js";
import { chunks, COLUMNS, headerClasses, rowSlice, type Image, type Request } from "./request.js";
import type { Column, Task } from "./types.js";

type Init = Record<string, unknown>;

/** A message from an init object that `messageInit` checked against the schema. */
function build<Desc extends DescMessage>(schema: Desc, init: Init): MessageShape<Desc> {
  return create(schema, init as MessageInitShape<Desc>);
}

const WIDE = new Set([
  ScalarType.INT64,
  ScalarType.UINT64,
  ScalarType.SINT64,
  ScalarType.FIXED64,
  ScalarType.SFIXED64,
]);

/**
 * The task of a `ListMetrics` request: TASK_UNSPECIFIED (every task) for null. A name the proto
 * has no value for is refused here, with the server's own message (gRPC cannot carry it; over
 * REST the server answers the same).
 */
export function catalogTask(task: Task | null): ProtoTask {
  if (task === null) {
    return ProtoTaskValue.UNSPECIFIED;
  }
  const value = TaskSchema.values.find(
    (v) => v.number !== ProtoTaskValue.UNSPECIFIED && v.name === `TASK_${task.toUpperCase()}`,
  );
  if (value === undefined) {
    const tasks = TaskSchema.values.slice(1).map((v) => `'${v.name.slice(5).toLowerCase()}'`);
    throw new InvalidArgument(`expected one of [${tasks.join(", ")}], but got '${String(task)}'`, {
      field: "task",
      code: "invalid_argument",
    });
  }
  return value.number as ProtoTask;
}

export function protoTask(task: Task): ProtoTask {
  const value = TaskSchema.values.find((v) => v.name === `TASK_${task.toUpperCase()}`);
  if (value === undefined) {
    const tasks = TaskSchema.values.slice(1).map((v) => v.name.slice(5).toLowerCase());
    throw new InvalidArgument(`expected one of ${tasks.join(", ")}, but got ${String(task)}`, {
      field: "task",
      code: "malformed",
    });
  }
  return value.number;
}

function isColumn(value: unknown): value is Column {
  return value instanceof Float64Array || Array.isArray(value);
}

function integer(value: unknown, where: string): bigint {
  if (typeof value !== "number" || !Number.isInteger(value)) {
    throw new InvalidArgument(`expected an integer, but got ${String(value)}`, {
      field: where,
      code: "malformed",
    });
  }
  return BigInt(value);
}

function scalar(field: DescField, value: unknown, where: string): unknown {
  const wide = "scalar" in field && field.scalar !== undefined && WIDE.has(field.scalar);
  if (!wide) {
    return value;
  }
  if (field.fieldKind === "list") {
    return (value as readonly unknown[]).map((item, index) => integer(item, `${where}[${index}]`));
  }
  return integer(value, where);
}

/**
 * The init object of a message from an object keyed by the proto's field names (the API's
 * snake case). An unknown name is refused as the REST door refuses it.
 */
function messageInit(schema: DescMessage, values: object, where: string): Init {
  const init: Init = {};
  for (const [key, value] of Object.entries(values)) {
    if (value == null) {
      continue;
    }
    // a payload's column (baseline, challenger) goes to its raw `*_f64` field
    const rawField = isColumn(value)
      ? schema.fields.find((f) => f.name === `${key}_f64`)
      : undefined;
    const field = rawField ?? schema.fields.find((f) => f.name === key);
    if (field === undefined) {
      const known = schema.fields.map((f) => f.name).filter((n) => !n.endsWith("_f64"));
      known.sort();
      // the REST door's message, which prints the names as a Python list
      const names = known.map((name) => `'${name}'`).join(", ");
      throw new InvalidArgument(`unknown field; expected one of [${names}]`, {
        field: `${where}.${key}`,
        code: "malformed",
      });
    }
    init[field.localName] = rawField
      ? f64Bytes(floats(value as Column))
      : scalar(field, value, `${where}.${key}`);
  }
  return init;
}

function headerInit(request: Request, stream: boolean): Init {
  const init: Init = { task: protoTask(request.task) };
  if (request.classes !== null) {
    init["classes"] = [...request.classes];
  }
  if (request.options !== null) {
    init["options"] = build(OptionsSchema, messageInit(OptionsSchema, request.options, "options"));
  }
  if (request.model !== null) {
    init["model"] = build(ModelSchema, messageInit(ModelSchema, request.model, "model"));
  }
  if (request.baseline !== null) {
    const baseline = messageInit(BaselineSchema, request.baseline, "baseline");
    init["baseline"] = build(BaselineSchema, baseline);
  }
  if (request.coverage !== null) {
    const coverage = messageInit(CoverageSchema, request.coverage, "coverage");
    init["coverage"] = build(CoverageSchema, coverage);
  }
  const nClasses = headerClasses(request, stream);
  if (nClasses !== null) {
    init["nClasses"] = BigInt(nClasses);
  }
  if (request.monitorState !== null) {
    init["monitorState"] = new Uint8Array(Buffer.from(request.monitorState, "base64"));
  }
  if (request.window !== null) {
    init["window"] = request.window;
  }
  return init;
}

function rowsInit(columns: Request["columns"], labelNames: readonly string[] | null): Init {
  const init: Init = {};
  for (const name of COLUMNS) {
    const values = columns[name];
    if (values !== undefined) {
      init[`${name}F64`] = f64Bytes(values);
    }
  }
  if (labelNames !== null) {
    init["labelNames"] = [...labelNames];
  }
  return init;
}

function images(given: readonly Image[]): DetectionImage[] {
  return given.map((image) =>
    build(DetectionImageSchema, {
      imageId: image.image_id,
      gtBoxes: Array.from(image.gt_boxes),
      gtClasses: Array.from(image.gt_classes, (c) => integer(c, "images.gt_classes")),
      predBoxes: Array.from(image.pred_boxes),
      predClasses: Array.from(image.pred_classes, (c) => integer(c, "images.pred_classes")),
      predScores: Array.from(image.pred_scores),
    }),
  );
}

export function toProto(request: Request): EvaluateRequest {
  const columns = rowsInit(request.columns, request.labelNames);
  const init: Init = { ...headerInit(request, false), ...columns };
  if (request.challenger !== null) {
    const challenger = messageInit(ChallengerSchema, request.challenger, "challenger");
    init["challenger"] = build(ChallengerSchema, challenger);
  }
  if (request.images !== null) {
    init["images"] = images(request.images);
  }
  return build(EvaluateRequestSchema, { ...init, ...segmentsInit(request) });
}

/** The segment fields of a one-shot request. */
function segmentsInit(request: Request): Init {
  const init: Init = {};
  if (request.segments !== null) {
    init["segments"] = [...request.segments];
  }
  if (request.segmentCodes !== null) {
    init["segmentCodes"] = request.segmentCodes.map((code) => integer(code, "segment_codes"));
  }
  if (request.segmentNames !== null) {
    init["segmentNames"] = [...request.segmentNames];
  }
  if (request.foldSegments) {
    init["foldSegments"] = true;
  }
  if (request.segmentMonitorStates !== null) {
    init["segmentMonitorStates"] = Object.fromEntries(
      Object.entries(request.segmentMonitorStates).map(([name, state]) => [
        name,
        new Uint8Array(Buffer.from(state, "base64")),
      ]),
    );
  }
  return init;
}

/** The stream of a request: its header alone, then one message per batch (rows or images). */
export function* toProtoStream(
  request: Request,
  chunkRows: number,
): Generator<EvaluateStreamRequest> {
  const header: StreamHeader = build(StreamHeaderSchema, headerInit(request, true));
  yield build(EvaluateStreamRequestSchema, { header });
  for (const [start, stop] of chunks(request, chunkRows)) {
    if (request.images !== null) {
      const batch = images(request.images.slice(start, stop));
      yield build(EvaluateStreamRequestSchema, { images: batch });
      continue;
    }
    const names = request.labelNames === null ? null : request.labelNames.slice(start, stop);
    yield build(EvaluateStreamRequestSchema, rowsInit(rowSlice(request, start, stop), names));
  }
}
