/**
 * Compile-time checks that the hand-written request and result types name exactly the proto's
 * fields (in snake case, as the API does): a field added to or renamed in the proto fails
 * `npm run typecheck` until `src/types.ts` follows. Types only; nothing here runs.
 */

import type * as pb from "./gen/evalserve/v1/evaluation_pb.js";
import type {
  Baseline,
  Challenger,
  Comparison,
  Coverage,
  CoverageReport,
  DriftTest,
  Interval,
  MetricInfo,
  MetricRange,
  Model,
  MonitorVerdict,
  Options,
} from "./types.js";

type Snake<S extends string> = S extends `${infer Head}${infer Tail}`
  ? `${Head extends Lowercase<Head> ? Head : `_${Lowercase<Head>}`}${Snake<Tail>}`
  : S;
type ProtoKeys<M> = Snake<Exclude<keyof M, "$typeName" | "$unknown"> & string>;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Expect<T extends true> = T;
/** A message's row columns travel as `name_f64` bytes: the caller passes `name`. */
type Columns<K> = K extends `${string}_f64` ? never : K;

export type SchemaChecks = [
  Expect<Same<keyof Options, ProtoKeys<pb.Options>>>,
  Expect<Same<keyof Model, ProtoKeys<pb.Model>>>,
  Expect<Same<keyof Baseline, Columns<ProtoKeys<pb.Baseline>>>>,
  Expect<Same<keyof Challenger, Columns<ProtoKeys<pb.Challenger>>>>,
  Expect<Same<keyof Interval, ProtoKeys<pb.Interval>>>,
  Expect<Same<keyof DriftTest, ProtoKeys<pb.DriftTest>>>,
  Expect<Same<keyof Comparison, ProtoKeys<pb.Comparison>>>,
  Expect<Same<keyof MetricInfo, ProtoKeys<pb.MetricInfo>>>,
  Expect<Same<keyof MetricRange, ProtoKeys<pb.MetricRange>>>,
  Expect<Same<keyof Coverage, ProtoKeys<pb.Coverage>>>,
  Expect<Same<keyof CoverageReport, ProtoKeys<pb.CoverageReport>>>,
  Expect<Same<keyof MonitorVerdict, ProtoKeys<pb.MonitorVerdict>>>,
];
