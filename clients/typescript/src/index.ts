/**
 * evalserve's TypeScript client:
 *
 *     import { EvalserveClient } from "@evalserve/client";
 *     const client = new EvalserveClient("localhost:50051"); // or "http://localhost:8000"
 *     const result = await client.evaluate("binary", [0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]);
 *     console.log(result.metrics["roc_auc"]);
 *     client.close();
 */

export { EvalserveClient, type ClientSettings } from "./client.js";
export { fingerprint, type ModelKey } from "./monitor-key.js";
export { MonitorStates, type MonitorEntry, type MonitorStatesOptions } from "./monitor-store.js";
export {
  flaggedShare,
  formatTarget,
  operatingPoint,
  OPERATING_OPTIONS,
  type FlaggedShare,
  type OperatingOption,
  type OperatingPoint,
  type OperatingPointOptions,
} from "./operating-points.js";
export {
  DeadlineExceeded,
  EvalserveError,
  InvalidArgument,
  TooLarge,
  Unavailable,
  type ErrorDetails,
} from "./errors.js";
export {
  classMetrics,
  type Baseline,
  type Challenger,
  type ClassRow,
  type ClientOptions,
  type Column,
  type Comparison,
  type Coverage,
  type CoverageReport,
  type Curve,
  type DetectionPrediction,
  type DetectionTarget,
  type DriftTest,
  type EvaluateOptions,
  type EvaluationResult,
  type Interval,
  type Labels,
  type ListMetricsOptions,
  type Matrix,
  type MetricInfo,
  type MetricRange,
  type Model,
  type MonitorVerdict,
  type Options,
  type Task,
  type Values,
} from "./types.js";
