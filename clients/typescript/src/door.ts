/** What the client asks of a transport: one attempt of each call, typed errors on failure. */

import type { Request } from "./request.js";
import type { EvaluationResult, MetricInfo, Task } from "./types.js";

export interface Door {
  /** The attempts one `evaluate` or `listMetrics` makes by itself (gRPC's retry policy), 1 if
   * none: the client's loop counts each of its attempts as that many. Streams make one. */
  readonly unaryAttempts: number;
  /** Evaluate once; `stream` sends the rows (images) in batches of `chunkRows` (request.ts). */
  evaluate(
    request: Request,
    stream: boolean,
    chunkRows: number,
    timeoutMs: number,
  ): Promise<EvaluationResult>;
  /** The catalog of `task`, or of every task when null. */
  listMetrics(task: Task | null, timeoutMs: number): Promise<MetricInfo[]>;
  close(): void;
}
