/**
 * Server refusals as typed errors, carrying the server's field and message.
 *
 * `code` is the server's error code over REST (`invalid_argument`, `malformed`, `too_large`,
 * ...) or the gRPC status name in snake case (`invalid_argument`, `resource_exhausted`, ...);
 * `field` names the offending request field when the server named one.
 */

export interface ErrorDetails {
  readonly field?: string | null;
  readonly code?: string;
  readonly cause?: unknown;
  /** The server's retry hint in ms (HTTP `Retry-After`, gRPC `google.rpc.RetryInfo`). */
  readonly retryAfterMs?: number | null;
}

/** A call the server (or the transport) refused. */
export class EvalserveError extends Error {
  readonly field: string | null;
  readonly code: string;
  /** The server's message, without the field. */
  readonly detail: string;
  /** How long the server asked to wait before a retry, in ms, when it said so. */
  readonly retryAfterMs: number | null;

  constructor(message: string, details: ErrorDetails = {}) {
    const field = details.field === undefined || details.field === "" ? null : details.field;
    super(field === null ? message : `${field}: ${message}`, { cause: details.cause });
    this.name = new.target.name;
    this.field = field;
    this.code = details.code ?? "";
    this.detail = message;
    this.retryAfterMs = details.retryAfterMs ?? null;
  }
}

/** The request is malformed or invalid (HTTP 400/415/422, gRPC INVALID_ARGUMENT). */
export class InvalidArgument extends EvalserveError {}

/** Over a configured limit of bytes, rows or classes (HTTP 413, gRPC RESOURCE_EXHAUSTED). */
export class TooLarge extends EvalserveError {}

/** The server could not be reached or is not serving, after every retry. */
export class Unavailable extends EvalserveError {}

/** The call did not finish within its timeout. */
export class DeadlineExceeded extends EvalserveError {}
