/**
 * The REST door: `fetch` (Node's undici) with JSON bodies, NDJSON streams, and the service's
 * error body `{"error": {"code", "field", "message"}}` turned into typed errors.
 */

import type { Door } from "./door.js";
import {
  DeadlineExceeded,
  EvalserveError,
  InvalidArgument,
  TooLarge,
  Unavailable,
} from "./errors.js";
import { toJson, toNdjson } from "./json-request.js";
import { retryAfterMs } from "./retry.js";
import type { Request } from "./request.js";
import type { EvaluationResult, MetricInfo, Task } from "./types.js";

/** A catalog entry as a server sends it: one of the catalog's first version lacks the rest. */
type RawMetricInfo = Pick<
  MetricInfo,
  "name" | "tasks" | "higher_is_better" | "definition" | "aliases"
> &
  Partial<MetricInfo>;

function metricInfo(raw: RawMetricInfo): MetricInfo {
  return {
    ...raw,
    task: raw.task ?? raw.tasks[0] ?? ("" as Task),
    range: raw.range ?? null,
    convention: raw.convention ?? "",
    reference: raw.reference ?? "",
    test: raw.test ?? "",
  };
}

const JSON_TYPE = "application/json";
const NDJSON_TYPE = "application/x-ndjson";

/** A streamed request body; Node's fetch needs `duplex: "half"` for one. */
type StreamingInit = RequestInit & { duplex: "half" };

function bodyStream(lines: Iterator<string>): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = lines.next();
      if (next.done === true) {
        controller.close();
      } else {
        controller.enqueue(encoder.encode(next.value));
      }
    },
  });
}

interface ErrorBody {
  readonly code?: unknown;
  readonly field?: unknown;
  readonly message?: unknown;
}

async function restError(response: Response): Promise<EvalserveError> {
  const text = await response.text();
  let code = String(response.status);
  let field: string | null = null;
  let message = text;
  try {
    const error = (JSON.parse(text) as { error?: ErrorBody }).error;
    if (error !== undefined && typeof error.message === "string") {
      message = error.message;
      code = typeof error.code === "string" ? error.code : code;
      field = typeof error.field === "string" ? error.field : null;
    }
  } catch {
    // not the service's error body (a proxy's page, say): its text is the message
  }
  const details = { field, code };
  if (response.status === 413) {
    return new TooLarge(message, details);
  }
  if ([502, 503, 504].includes(response.status)) {
    const hint = retryAfterMs(response.headers.get("retry-after"));
    return new Unavailable(message, { ...details, retryAfterMs: hint });
  }
  if (response.status >= 400 && response.status < 500) {
    return new InvalidArgument(message, details);
  }
  return new EvalserveError(message, details);
}

/** A failure of fetch itself: a timeout, or no connection. */
function transportError(error: unknown): EvalserveError {
  if (error instanceof EvalserveError) {
    return error;
  }
  if (error instanceof DOMException && ["TimeoutError", "AbortError"].includes(error.name)) {
    return new DeadlineExceeded(error.message, { code: "deadline_exceeded", cause: error });
  }
  const cause = error instanceof Error ? error.cause : undefined;
  const reason = cause instanceof Error ? cause.message : String(error);
  return new Unavailable(reason, { code: "unavailable", cause: error });
}

export class RestDoor implements Door {
  readonly unaryAttempts = 1;

  /** `baseUrl` is http(s)://host:port, without a trailing slash. */
  constructor(
    private readonly baseUrl: string,
    private readonly headers: Readonly<Record<string, string>> = {},
  ) {}

  private async call<T>(path: string, init: RequestInit, timeoutMs: number): Promise<T> {
    try {
      const signal = AbortSignal.timeout(timeoutMs);
      const response = await fetch(`${this.baseUrl}${path}`, { ...init, signal });
      if (response.status !== 200) {
        throw await restError(response);
      }
      return (await response.json()) as T;
    } catch (error) {
      throw transportError(error);
    }
  }

  evaluate(
    request: Request,
    stream: boolean,
    chunkRows: number,
    timeoutMs: number,
  ): Promise<EvaluationResult> {
    if (stream) {
      const init: StreamingInit = {
        method: "POST",
        headers: { ...this.headers, "content-type": NDJSON_TYPE, accept: JSON_TYPE },
        body: bodyStream(toNdjson(request, chunkRows)),
        duplex: "half",
      };
      return this.call("/v1/evaluate/stream", init, timeoutMs);
    }
    const init: RequestInit = {
      method: "POST",
      headers: { ...this.headers, "content-type": JSON_TYPE, accept: JSON_TYPE },
      body: JSON.stringify(toJson(request)),
    };
    return this.call("/v1/evaluate", init, timeoutMs);
  }

  async listMetrics(task: Task | null, timeoutMs: number): Promise<MetricInfo[]> {
    const init: RequestInit = {
      method: "GET",
      headers: { ...this.headers, accept: JSON_TYPE },
    };
    const query = task === null ? "" : `?${new URLSearchParams({ task }).toString()}`;
    const catalog = await this.call<{ metrics: RawMetricInfo[] }>(
      `/v1/metrics${query}`,
      init,
      timeoutMs,
    );
    return catalog.metrics.map(metricInfo);
  }

  close(): void {
    // fetch keeps no connection of ours open: nothing to release
  }
}
