/**
 * gRPC refusals as typed errors. The service ends a refused call with the message
 * "field: description" and a `google.rpc.BadRequest` detail naming the field; the details are
 * decoded with the generated google.rpc messages (src/gen/google/rpc) when present (a field such
 * as "batch 2.scores" holds a space, so splitting the message is only the fallback). A
 * `google.rpc.RetryInfo` detail, or gRFC A6's `grpc-retry-pushback-ms` trailer, is the server's
 * retry hint.
 */

import { Code, ConnectError } from "@connectrpc/connect";

import {
  DeadlineExceeded,
  EvalserveError,
  InvalidArgument,
  TooLarge,
  Unavailable,
} from "./errors.js";
import { BadRequestSchema, RetryInfoSchema } from "./gen/google/rpc/error_details_pb.js";

interface Violation {
  readonly field: string;
  readonly description: string;
}

/** Every field violation of the error's BadRequest details. */
export function violations(error: ConnectError): Violation[] {
  try {
    return error
      .findDetails(BadRequestSchema)
      .flatMap((bad) => bad.fieldViolations)
      .map(({ field, description }) => ({ field, description }));
  } catch {
    return []; // details that do not decode: the message is all there is
  }
}

function violation(error: ConnectError): Violation {
  const [first] = violations(error);
  if (first !== undefined) {
    return first;
  }
  const message = error.rawMessage;
  const split = message.indexOf(": ");
  const field = split < 0 ? "" : message.slice(0, split);
  if (field === "" || field.includes(" ")) {
    return { field: "", description: message };
  }
  return { field, description: message.slice(split + 2) };
}

/** The server's retry hint in ms: its RetryInfo detail, else its pushback trailer; or null. */
export function retryHintMs(error: ConnectError): number | null {
  try {
    const [info] = error.findDetails(RetryInfoSchema);
    const delay = info?.retryDelay;
    if (delay !== undefined) {
      return Math.max(0, Number(delay.seconds) * 1000 + delay.nanos / 1e6);
    }
  } catch {
    // not decodable: no hint from the details
  }
  const pushback = error.metadata.get("grpc-retry-pushback-ms");
  return pushback !== null && /^\d+$/.test(pushback.trim()) ? Number(pushback) : null;
}

function snakeCase(name: string): string {
  return name.replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
}

/** Node's codes of a TLS handshake that failed (an untrusted or mismatched certificate). */
const TLS_FAILURE = /^(ERR_TLS_|ERR_SSL_|UNABLE_TO_|CERT_|DEPTH_ZERO_|SELF_SIGNED_)/;

/** Whether a TLS handshake failed somewhere in the error's cause chain. */
function tlsFailure(thrown: unknown): boolean {
  for (let error = thrown, depth = 0; error instanceof Error && depth < 8; depth += 1) {
    const code = (error as { code?: unknown }).code;
    if (typeof code === "string" && TLS_FAILURE.test(code)) {
      return true;
    }
    error = error.cause;
  }
  return false;
}

/** The typed error of a failed gRPC call. */
export function grpcError(thrown: unknown): EvalserveError {
  if (thrown instanceof EvalserveError) {
    return thrown; // refused before it was sent
  }
  const error = ConnectError.from(thrown);
  const code = snakeCase(Code[error.code]);
  // A server whose certificate is not trusted is not reached: UNAVAILABLE, as gRPC's own
  // clients (the Python one among them) report it, where Connect says INTERNAL.
  if (tlsFailure(thrown) || tlsFailure(error.cause)) {
    return new Unavailable(error.rawMessage, { code: "unavailable", cause: thrown });
  }
  if (error.code === Code.Unavailable) {
    const retryAfterMs = retryHintMs(error);
    return new Unavailable(error.rawMessage, { code, cause: thrown, retryAfterMs });
  }
  if (error.code === Code.DeadlineExceeded) {
    return new DeadlineExceeded(error.rawMessage, { code, cause: thrown });
  }
  const { field, description } = violation(error);
  const details = { field, code, cause: thrown };
  switch (error.code) {
    case Code.InvalidArgument:
      return new InvalidArgument(description, details);
    case Code.ResourceExhausted: {
      // with a retry hint the server's memory is busy now, not a limit: retried as REST's 503
      const retryAfterMs = retryHintMs(error);
      return retryAfterMs === null
        ? new TooLarge(description, details)
        : new Unavailable(error.rawMessage, { code, cause: thrown, retryAfterMs });
    }
    default:
      return new EvalserveError(description, details);
  }
}
