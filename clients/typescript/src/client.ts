/**
 * `EvalserveClient`: one `evaluate` over gRPC (`host:port`, `grpc://host:port`) or REST
 * (`http://`, `https://`), with deadlines, retries of these idempotent calls when the server is
 * unavailable (full-jitter backoff, the server's retry hint as its floor, a cap on the attempts
 * and on the total time: retry.ts), and automatic streaming of large inputs of every task (see
 * `request.ts` for what a stream's size counts).
 */

import type { Door } from "./door.js";
import { EvalserveError, InvalidArgument, Unavailable } from "./errors.js";
import { GrpcDoor } from "./grpc.js";
import type { UnaryRetry } from "./grpc-unary.js";
import { MonitorStates } from "./monitor-store.js";
import { Track } from "./monitoring.js";
import {
  detectionRequest,
  rowsRequest,
  segmented,
  streamSize,
  type Request,
} from "./request.js";
import { RestDoor } from "./rest.js";
import { CHANNEL_RETRIED, checkedPolicy, Schedule, type RetryPolicy } from "./retry.js";
import type {
  ClientOptions,
  DetectionPrediction,
  DetectionTarget,
  EvaluateOptions,
  EvaluationResult,
  Labels,
  ListMetricsOptions,
  MetricInfo,
  Task,
  Values,
} from "./types.js";

/** The settings of a client: every option but `ca`, which only the connection keeps, and
 * `monitorStates` (the client's `monitorStates`). */
export type ClientSettings = Required<Omit<ClientOptions, "ca" | "monitorStates">>;

const DEFAULTS: ClientSettings = {
  timeoutMs: 60_000,
  retries: 3,
  backoffMs: 200,
  maxBackoffMs: 5_000,
  retryDeadlineMs: 30_000,
  streamThreshold: 1_000_000,
  chunkRows: 250_000,
  headers: {},
};

const RESERVED = new Set(["content-type", "content-length", "te", "host", "user-agent"]);

/** The headers, checked once: names lowercased (gRPC metadata keys must be), values ASCII. */
function checkedHeaders(headers: Readonly<Record<string, string>>): Record<string, string> {
  const checked: Record<string, string> = {};
  for (const [key, value] of Object.entries(headers)) {
    const name = key.toLowerCase();
    if (!/^[a-z0-9._-]+$/.test(name)) {
      throw new TypeError(`header ${JSON.stringify(key)}: a name of letters, digits, '-', '_' or '.'`);
    }
    if (name.endsWith("-bin") || name.startsWith("grpc-") || RESERVED.has(name)) {
      throw new TypeError(`header ${JSON.stringify(key)}: reserved for the transport`);
    }
    if (!/^[\x20-\x7e]*$/.test(value)) {
      throw new TypeError(`header ${JSON.stringify(key)}: the value must be printable ASCII`);
    }
    checked[name] = value;
  }
  return checked;
}

function door(
  target: string,
  headers: Record<string, string>,
  ca: string | undefined,
  retry: UnaryRetry,
): Door {
  if (/^https?:\/\//.test(target)) {
    return new RestDoor(target.replace(/\/+$/, ""), headers);
  }
  if (target.startsWith("grpcs://")) {
    const tls = ca === undefined ? {} : { ca };
    return new GrpcDoor(target.slice("grpcs://".length), headers, tls, retry);
  }
  return new GrpcDoor(target.replace(/^grpc:\/\//, ""), headers, null, retry);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** What the retries wait with, read the time from and draw their jitter from. */
export interface RetryClock {
  readonly sleep: (ms: number) => Promise<void>;
  readonly now: () => number;
  readonly random: () => number;
}

const REAL_CLOCK: RetryClock = { sleep, now: () => performance.now(), random: Math.random };

export class EvalserveClient {
  readonly target: string;
  readonly settings: Readonly<ClientSettings>;
  /** Where the AUC monitor's state of each model is kept between calls. */
  readonly monitorStates: MonitorStates;
  private readonly door: Door;
  private closed = false;
  /** Replaced by tests only. */
  retryClock: RetryClock = REAL_CLOCK;

  /**
   * `new EvalserveClient("localhost:50051")` speaks gRPC (`grpcs://host:port` over TLS), `new
   * EvalserveClient("http://localhost:8000")` REST (`https://` over TLS). Call `close()` when
   * done.
   *
   * A binary `evaluate` with a `model` and a `baseline` feeds that model's AUC monitor: the
   * client sends the state it kept from the model's last window and keeps the answer's (in
   * memory, or in the file `monitorStates` names), so calling it every hour is all a monitor
   * needs (monitoring.ts says what a new baseline or a refused state does).
   */
  constructor(target: string, options: ClientOptions = {}) {
    this.target = target;
    const { ca, monitorStates, ...rest } = options;
    this.monitorStates =
      monitorStates instanceof MonitorStates
        ? monitorStates
        : new MonitorStates(monitorStates === undefined ? {} : { path: monitorStates });
    this.settings = { ...DEFAULTS, ...definedOnly(rest) };
    const policy = checkedPolicy(this.policy());
    this.door = door(target, checkedHeaders(this.settings.headers), ca, policy);
  }

  /** Evaluate as `core.evaluate` does, on the server; rejects with an `EvalserveError`. */
  evaluate(
    task: "detection",
    yTrue: readonly DetectionTarget[],
    yScore: readonly DetectionPrediction[],
    opts?: EvaluateOptions,
  ): Promise<EvaluationResult>;
  evaluate(
    task: Exclude<Task, "detection">,
    yTrue: Labels,
    yScore?: Values | null,
    opts?: EvaluateOptions,
  ): Promise<EvaluationResult>;
  evaluate(
    task: Task,
    yTrue: Labels | readonly DetectionTarget[],
    yScore?: Values | readonly DetectionPrediction[] | null,
    opts?: EvaluateOptions,
  ): Promise<EvaluationResult>;
  async evaluate(
    task: Task,
    yTrue: Labels | readonly DetectionTarget[],
    yScore?: Values | readonly DetectionPrediction[] | null,
    opts: EvaluateOptions = {},
  ): Promise<EvaluationResult> {
    const request: Request =
      task === "detection"
        ? detectionRequest(
            yTrue as readonly DetectionTarget[],
            (yScore ?? []) as readonly DetectionPrediction[],
            opts,
          )
        : rowsRequest(task, yTrue as Labels, yScore as Values | null | undefined, opts);
    // a challenger has no place in a stream's header, and streams take no segments yet: such
    // a request goes in one message
    const oneMessage = request.challenger !== null || segmented(request);
    const stream = !oneMessage && streamSize(request) > this.settings.streamThreshold;
    const timeoutMs = opts.timeoutMs ?? this.settings.timeoutMs;
    const send = (sent: Request): Promise<EvaluationResult> =>
      this.retried(
        () => this.door.evaluate(sent, stream, this.settings.chunkRows, timeoutMs),
        stream ? 1 : this.door.unaryAttempts,
      );
    const track = await Track.start(this.monitorStates, request, opts.window ?? null);
    if (track === null) {
      return send(request);
    }
    for (;;) {
      let answer: EvaluationResult;
      try {
        answer = await send(track.request(request));
      } catch (error) {
        if (error instanceof InvalidArgument && (await track.refused(error))) {
          continue;
        }
        throw error;
      }
      if (await track.settle(answer)) {
        return track.result(answer);
      }
    }
  }

  /**
   * The metric catalog: every metric the server can return, or those of one task (an unknown
   * task is refused with `InvalidArgument`, field `task`), each with its definition, direction,
   * range, aliases, convention, reference and test. `listMetrics("binary")` and
   * `listMetrics({ task: "binary" })` are the same call.
   */
  listMetrics(opts?: ListMetricsOptions): Promise<MetricInfo[]>;
  listMetrics(task: Task | null, opts?: Omit<ListMetricsOptions, "task">): Promise<MetricInfo[]>;
  listMetrics(
    taskOrOpts: Task | null | ListMetricsOptions = {},
    more: Omit<ListMetricsOptions, "task"> = {},
  ): Promise<MetricInfo[]> {
    const opts: ListMetricsOptions =
      taskOrOpts === null || typeof taskOrOpts === "string"
        ? { ...more, ...(taskOrOpts === null ? {} : { task: taskOrOpts }) }
        : taskOrOpts;
    const timeoutMs = opts.timeoutMs ?? this.settings.timeoutMs;
    const task = opts.task ?? null;
    return this.retried(() => this.door.listMetrics(task, timeoutMs), this.door.unaryAttempts);
  }

  /** Close the connection (gRPC); later calls are refused. */
  close(): void {
    this.closed = true;
    this.door.close();
  }

  private policy(): RetryPolicy {
    const { retries, backoffMs, maxBackoffMs, retryDeadlineMs } = this.settings;
    return { retries, backoffMs, maxBackoffMs, retryDeadlineMs };
  }

  /** `attempt()` until it is not Unavailable or the schedule says stop; `perCall`: the
   * attempts each one makes by itself (gRPC's retry policy's, for a gRPC unary call). */
  private async retried<T>(attempt: () => Promise<T>, perCall: number): Promise<T> {
    const clock = this.retryClock;
    const schedule = new Schedule(this.policy(), clock.now, clock.random, perCall);
    for (;;) {
      if (this.closed) {
        throw new EvalserveError("the client is closed", { code: "closed" });
      }
      let pause: number | null;
      try {
        return await attempt();
      } catch (error) {
        // the channel's policy retried it: an UNAVAILABLE, not a RESOURCE_EXHAUSTED with a hint
        const retried = error instanceof Unavailable && CHANNEL_RETRIED.includes(error.code);
        pause = error instanceof Unavailable ? schedule.pause(error.retryAfterMs, retried) : null;
        if (pause === null) {
          throw error;
        }
      }
      await clock.sleep(pause);
    }
  }
}

function definedOnly(
  options: Omit<ClientOptions, "ca" | "monitorStates">,
): Partial<ClientSettings> {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));
}
