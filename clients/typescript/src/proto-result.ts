/**
 * gRPC answers in the JSON shape of the REST door, as the Python client's `_wire.from_proto`
 * and the service's `encode.proto_to_json` write them: undefined metrics as null (with their
 * reasons in `undefined`), unset optional fields of a test as null, and the non-finite values
 * of a curve (the +inf start of a threshold list) as null.
 */

import type { DescMessage, MessageShape } from "@bufbuild/protobuf";

import {
  ComparisonSchema,
  DriftTestSchema,
  MonitorVerdictSchema,
  TaskSchema,
  type ClassMetrics,
  type EvaluateResponse,
  type Interval as ProtoInterval,
  type ListMetricsResponse,
  type Task as ProtoTask,
} from "./gen/evalserve/v1/evaluation_pb.js";
import type {
  ClassRow,
  Comparison,
  CoverageReport,
  Curve,
  DriftTest,
  EvaluationResult,
  Interval,
  MetricInfo,
  MonitorVerdict,
  Task,
} from "./types.js";

export function taskName(task: ProtoTask): Task {
  const name = TaskSchema.value[task]?.name ?? `TASK_${String(task)}`;
  return name.slice("TASK_".length).toLowerCase() as Task;
}

function finite(values: readonly number[]): (number | null)[] {
  return values.map((value) => (Number.isFinite(value) ? value : null));
}

function mapValues<A, B>(record: Readonly<Record<string, A>>, f: (a: A) => B): Record<string, B> {
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key, f(value)]));
}

function interval(message: ProtoInterval): Interval {
  const entry: { -readonly [K in keyof Interval]: Interval[K] } = {
    lower: message.lower,
    upper: message.upper,
    level: message.level,
    method: message.method,
    std_error: message.stdError,
  };
  if (message.replicates !== undefined) {
    entry.replicates = Number(message.replicates);
  }
  if (message.seed !== undefined) {
    entry.seed = Number(message.seed);
  }
  return entry;
}

/** Every field of a test, by its proto name, in declaration order: an unset one is null. */
function allFields<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): object {
  const fields = message as unknown as Record<string, unknown>;
  return Object.fromEntries(
    schema.fields.map((field) => {
      const value = fields[field.localName];
      return [field.name, value === undefined ? null : value];
    }),
  );
}

function classRow(row: ClassMetrics): ClassRow {
  return {
    class: row.className,
    ...row.metrics,
    ...mapValues(row.undefined, () => null),
    undefined: { ...row.undefined },
    intervals: mapValues(row.intervals, interval),
  };
}

function curves(response: EvaluateResponse): Record<string, Curve> {
  const out: Record<string, Curve> = {};
  const { roc, pr, other } = response.curves ?? { other: {} };
  if (roc !== undefined) {
    out["roc"] = { fpr: finite(roc.fpr), tpr: finite(roc.tpr), thresholds: finite(roc.thresholds) };
  }
  if (pr !== undefined) {
    out["pr"] = {
      precision: finite(pr.precision),
      recall: finite(pr.recall),
      thresholds: finite(pr.thresholds),
    };
  }
  for (const [name, named] of Object.entries(other)) {
    out[name] = mapValues(named.arrays, (values) => finite(values.values));
  }
  return out;
}

export function resultFromProto(response: EvaluateResponse): EvaluationResult {
  const segments = Object.keys(response.segments).sort();
  return {
    ...resultFields(response),
    // each segment's answer, as the REST door gives it: only when the request had segments
    ...(segments.length === 0
      ? {}
      : {
          segments: Object.fromEntries(
            segments.map((name) => [
              name,
              resultFromProto(response.segments[name] as EvaluateResponse),
            ]),
          ),
        }),
  };
}

function resultFields(response: EvaluateResponse): EvaluationResult {
  return {
    task: taskName(response.task),
    n_samples: Number(response.nSamples),
    metrics: { ...response.metrics, ...mapValues(response.undefined, () => null) },
    undefined: { ...response.undefined },
    per_class: response.perClass.map(classRow),
    curves: curves(response),
    intervals: mapValues(response.intervals, interval),
    drift: mapValues(response.drift, (test) => allFields(DriftTestSchema, test) as DriftTest),
    comparison: mapValues(
      response.comparison,
      (test) => allFields(ComparisonSchema, test) as Comparison,
    ),
    conventions: { ...response.conventions },
    warnings: [...response.warnings],
    coverage: coverageReport(response),
    monitor: mapValues(response.monitor, (verdict) => {
      const fields = allFields(MonitorVerdictSchema, verdict) as Record<string, unknown>;
      return { ...fields, windows: Number(verdict.windows) } as MonitorVerdict;
    }),
    monitor_state: monitorState(response.monitorState),
  };
}

/** The monitor's state as the REST door gives it: base64, or null when there is none. */
function monitorState(bytes: Uint8Array): string | null {
  return bytes.length > 0 ? Buffer.from(bytes).toString("base64") : null;
}

/** The coverage block as the REST door gives it: {} or n_labelled and the fields set. */
function coverageReport(response: EvaluateResponse): CoverageReport {
  const report = response.coverage;
  if (report === undefined) {
    return {};
  }
  return {
    ...(report.nPredictions === undefined ? {} : { n_predictions: Number(report.nPredictions) }),
    n_labelled: Number(report.nLabelled),
    ...(report.labelCoverage === undefined ? {} : { label_coverage: report.labelCoverage }),
    ...(report.labelDelaySeconds === undefined
      ? {}
      : { label_delay_seconds: report.labelDelaySeconds }),
  };
}

export function catalogFromProto(response: ListMetricsResponse): MetricInfo[] {
  return response.metrics.map((info) => {
    const tasks = info.tasks.map(taskName);
    const range = info.range;
    return {
      name: info.name,
      tasks,
      higher_is_better: info.higherIsBetter ?? null,
      definition: info.definition,
      aliases: [...info.aliases],
      // a server of the catalog's first version sends neither task nor range
      task: info.task === 0 ? (tasks[0] ?? ("" as Task)) : taskName(info.task),
      range: range === undefined ? null : { lower: range.lower ?? null, upper: range.upper ?? null },
      convention: info.convention,
      reference: info.reference,
      test: info.test,
    };
  });
}
