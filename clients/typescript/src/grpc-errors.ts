/**
 * gRPC refusals as typed errors. The service ends a refused call with the message
 * "field: description" and a `google.rpc.BadRequest` detail naming the field; the detail is
 * read when present (a field such as "batch 2.scores" holds a space, so splitting the message
 * is only the fallback).
 */

import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { Code, ConnectError } from "@connectrpc/connect";

import {
  DeadlineExceeded,
  EvalserveError,
  InvalidArgument,
  TooLarge,
  Unavailable,
} from "./errors.js";

const BAD_REQUEST = "google.rpc.BadRequest";

interface Violation {
  readonly field: string;
  readonly description: string;
}

/** The first field violation of an encoded google.rpc.BadRequest (fields 1: field_violations;
 * in each, 1: field, 2: description). */
function firstViolation(bytes: Uint8Array): Violation | null {
  const outer = new BinaryReader(bytes);
  while (outer.pos < outer.len) {
    const [number, wireType] = outer.tag();
    if (number !== 1 || wireType !== WireType.LengthDelimited) {
      outer.skip(wireType, number);
      continue;
    }
    const inner = new BinaryReader(outer.bytes());
    let field = "";
    let description = "";
    while (inner.pos < inner.len) {
      const [innerNumber, innerType] = inner.tag();
      if (innerNumber === 1 && innerType === WireType.LengthDelimited) {
        field = inner.string();
      } else if (innerNumber === 2 && innerType === WireType.LengthDelimited) {
        description = inner.string();
      } else {
        inner.skip(innerType, innerNumber);
      }
    }
    return { field, description };
  }
  return null;
}

function violation(error: ConnectError): Violation {
  for (const detail of error.details) {
    if ("type" in detail && detail.type === BAD_REQUEST) {
      const found = firstViolation(detail.value);
      if (found !== null) {
        return found;
      }
    }
  }
  const message = error.rawMessage;
  const split = message.indexOf(": ");
  const field = split < 0 ? "" : message.slice(0, split);
  if (field === "" || field.includes(" ")) {
    return { field: "", description: message };
  }
  return { field, description: message.slice(split + 2) };
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
    return new Unavailable(error.rawMessage, { code, cause: thrown });
  }
  if (error.code === Code.DeadlineExceeded) {
    return new DeadlineExceeded(error.rawMessage, { code, cause: thrown });
  }
  const { field, description } = violation(error);
  const details = { field, code, cause: thrown };
  switch (error.code) {
    case Code.InvalidArgument:
      return new InvalidArgument(description, details);
    case Code.ResourceExhausted:
      return new TooLarge(description, details);
    default:
      return new EvalserveError(description, details);
  }
}
