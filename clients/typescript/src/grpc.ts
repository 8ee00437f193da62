/**
 * The gRPC door: unary calls on a grpc-js channel with gRPC's retry policy (grpc-unary.ts),
 * streams on Connect's gRPC transport over one HTTP/2 connection (node:http2).
 */

import { create } from "@bufbuild/protobuf";
import { createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";

import type { Door } from "./door.js";
import {
  EvaluateRequestSchema,
  EvaluateResponseSchema,
  EvaluationService,
  ListMetricsRequestSchema,
  ListMetricsResponseSchema,
  type EvaluateStreamRequest,
} from "./gen/evalserve/v1/evaluation_pb.js";
import { grpcError } from "./grpc-errors.js";
import { grpcAttempts, UnaryChannel, type UnaryRetry } from "./grpc-unary.js";
import { catalogTask, toProto, toProtoStream } from "./proto-request.js";
import { catalogFromProto, resultFromProto } from "./proto-result.js";
import type { Request } from "./request.js";
import type { EvaluationResult, MetricInfo, Task } from "./types.js";

async function* asAsync(
  messages: Iterable<EvaluateStreamRequest>,
): AsyncGenerator<EvaluateStreamRequest> {
  yield* messages;
}

export class GrpcDoor implements Door {
  private readonly session: Http2SessionManager;
  private readonly client: Client<typeof EvaluationService>;
  private readonly unary: UnaryChannel;
  /** Attempts of a unary call, gRPC's retry policy's. */
  readonly unaryAttempts: number;

  /**
   * `address` is host:port; the connection opens on the first call. With `tls`, HTTP/2 over TLS,
   * trusting `ca` (PEM) instead of Node's CAs when given.
   */
  constructor(
    address: string,
    private readonly headers: Readonly<Record<string, string>> = {},
    tls: { readonly ca?: string } | null = null,
    retry: UnaryRetry = { retries: 0, backoffMs: 200, maxBackoffMs: 5000 },
  ) {
    const baseUrl = `${tls === null ? "http" : "https"}://${address}`;
    const nodeOptions = tls?.ca === undefined ? {} : { ca: tls.ca };
    this.session = new Http2SessionManager(baseUrl, {}, nodeOptions);
    const transport = createGrpcTransport({ baseUrl, sessionManager: this.session });
    this.client = createClient(EvaluationService, transport);
    this.unary = new UnaryChannel(address, headers, tls, retry);
    this.unaryAttempts = grpcAttempts(retry);
  }

  async evaluate(
    request: Request,
    stream: boolean,
    chunkRows: number,
    timeoutMs: number,
  ): Promise<EvaluationResult> {
    try {
      const answer = stream
        ? await this.client.evaluateStream(asAsync(toProtoStream(request, chunkRows)), {
            timeoutMs,
            headers: this.headers,
          })
        : await this.unary.call(
            "Evaluate",
            EvaluateRequestSchema,
            EvaluateResponseSchema,
            toProto(request),
            timeoutMs,
          );
      return resultFromProto(answer);
    } catch (error) {
      throw grpcError(error);
    }
  }

  async listMetrics(task: Task | null, timeoutMs: number): Promise<MetricInfo[]> {
    const request = create(ListMetricsRequestSchema, { task: catalogTask(task) });
    try {
      return catalogFromProto(
        await this.unary.call(
          "ListMetrics",
          ListMetricsRequestSchema,
          ListMetricsResponseSchema,
          request,
          timeoutMs,
        ),
      );
    } catch (error) {
      throw grpcError(error);
    }
  }

  close(): void {
    this.session.abort();
    this.unary.close();
  }
}
