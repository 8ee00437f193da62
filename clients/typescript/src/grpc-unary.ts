/**
 * The gRPC door's unary calls (`Evaluate`, `ListMetrics`) on a `@grpc/grpc-js` channel, whose
 * service config carries gRPC's own retry policy (gRFC A6: `retryPolicy`, retried on
 * UNAVAILABLE with the same full-jitter backoff, honouring the `grpc-retry-pushback-ms` trailer,
 * within the call's deadline). Connect's transport has no retry policy; streams stay on it and
 * are retried by the client's loop (client.ts). Messages are protobuf-es's, (de)serialized here;
 * a failed call becomes a `ConnectError` with the details of its `grpc-status-details-bin`
 * trailer, so grpc-errors.ts reads both transports alike.
 */

import { fromBinary, toBinary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  Client,
  credentials,
  Metadata,
  type ChannelOptions,
  type ServiceError,
} from "@grpc/grpc-js";

import { StatusSchema } from "./gen/google/rpc/status_pb.js";
import { CHANNEL_RETRIED } from "./retry.js";

const SERVICE = "evalserve.v1.EvaluationService";
const MAX_MESSAGE = 256 * 1024 * 1024;
/** gRPC clamps a retry policy's maxAttempts to 5 (gRFC A6). */
export const GRPC_MAX_ATTEMPTS = 5;

export interface UnaryRetry {
  readonly retries: number;
  readonly backoffMs: number;
  readonly maxBackoffMs: number;
}

/** The attempts gRPC's retry policy makes of one unary call. */
export function grpcAttempts(retry: UnaryRetry): number {
  return Math.min(retry.retries + 1, GRPC_MAX_ATTEMPTS);
}

function seconds(ms: number): string {
  return `${(Math.max(ms, 1) / 1000).toFixed(3)}s`;
}

/** The channel's service config (JSON): the retry policy of the unary methods, none when
 * `retries` is 0. */
export function serviceConfig(retry: UnaryRetry): string {
  if (retry.retries === 0) {
    return JSON.stringify({});
  }
  const retryPolicy = {
    maxAttempts: grpcAttempts(retry),
    initialBackoff: seconds(retry.backoffMs),
    maxBackoff: seconds(Math.max(retry.maxBackoffMs, retry.backoffMs)),
    backoffMultiplier: 2,
    retryableStatusCodes: CHANNEL_RETRIED.map((code) => code.toUpperCase()),
  };
  const name = ["Evaluate", "ListMetrics"].map((method) => ({ service: SERVICE, method }));
  return JSON.stringify({ methodConfig: [{ name, retryPolicy }] });
}

/** The unary channel's options: message sizes, retries, reconnects on the client's backoff. */
export function channelOptions(retry: UnaryRetry): ChannelOptions {
  const maxBackoffMs = Math.max(retry.maxBackoffMs, retry.backoffMs);
  return {
    "grpc.max_send_message_length": MAX_MESSAGE,
    "grpc.max_receive_message_length": MAX_MESSAGE,
    // grpc-js keeps a call's messages for its retries only up to 256 KiB by default, and does
    // not retry a larger call: keep any message this client sends (four at once)
    "grpc.per_rpc_retry_buffer_size": MAX_MESSAGE,
    "grpc.retry_buffer_size": 4 * MAX_MESSAGE,
    "grpc.enable_retries": 1,
    "grpc.service_config": serviceConfig(retry),
    "grpc.initial_reconnect_backoff_ms": Math.max(1, Math.round(retry.backoffMs)),
    "grpc.max_reconnect_backoff_ms": Math.max(1, Math.round(maxBackoffMs)),
  };
}

/** A grpc-js failure as a ConnectError: code, message, trailers and decoded status details. */
function connectError(error: ServiceError): ConnectError {
  const trailers = new Headers();
  for (const [key, value] of Object.entries(error.metadata?.getMap() ?? {})) {
    if (typeof value === "string") {
      trailers.set(key, value);
    }
  }
  const code = error.code as number as Code; // gRPC's numbering, which Connect's Code keeps
  const converted = new ConnectError(error.details, code, trailers, [], error);
  const [bin] = error.metadata?.get("grpc-status-details-bin") ?? [];
  if (bin instanceof Uint8Array) {
    try {
      for (const detail of fromBinary(StatusSchema, bin).details) {
        const type = detail.typeUrl.slice(detail.typeUrl.lastIndexOf("/") + 1);
        converted.details.push({ type, value: detail.value });
      }
    } catch {
      // details that do not decode: the message is all there is
    }
  }
  return converted;
}

export class UnaryChannel {
  private readonly client: Client;

  constructor(
    address: string,
    private readonly headers: Readonly<Record<string, string>>,
    tls: { readonly ca?: string } | null,
    retry: UnaryRetry,
  ) {
    const channelCredentials =
      tls === null
        ? credentials.createInsecure()
        : credentials.createSsl(tls.ca === undefined ? null : Buffer.from(tls.ca));
    this.client = new Client(address, channelCredentials, channelOptions(retry));
  }

  call<I extends DescMessage, O extends DescMessage>(
    method: "Evaluate" | "ListMetrics",
    input: I,
    output: O,
    message: MessageShape<I>,
    timeoutMs: number,
  ): Promise<MessageShape<O>> {
    const metadata = new Metadata();
    for (const [key, value] of Object.entries(this.headers)) {
      metadata.set(key, value);
    }
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(
        `/${SERVICE}/${method}`,
        (value: MessageShape<I>) => Buffer.from(toBinary(input, value)),
        (bytes: Buffer) => fromBinary(output, bytes),
        message,
        metadata,
        { deadline: Date.now() + timeoutMs },
        (error, answer) => {
          if (error !== null || answer === undefined) {
            const failure = error ?? new ConnectError("no answer", Code.Internal);
            reject(failure instanceof ConnectError ? failure : connectError(failure));
          } else {
            resolve(answer);
          }
        },
      );
    });
  }

  close(): void {
    this.client.close();
  }
}
