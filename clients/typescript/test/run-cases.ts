/**
 * Runs a batch of client calls and prints every answer as one JSON document, for
 * tests/clients/test_typescript.py (one Node process for many cases).
 *
 *     tsx test/run-cases.ts CASES.json
 *
 * CASES.json: {"cases": [{"id", "target", "settings"?, "call": "evaluate" | "listMetrics",
 * "task"?, "yTrue"?, "yScore"?, "opts"?}], "parallel"?: bool}; listMetrics takes the task, or
 * its opts object when "opts" is given. Anywhere in the arguments,
 * {"f64": BASE64} stands for a Float64Array of those little-endian bytes (the other arrays stay
 * number[] / string[]), and {"number": "Infinity" | "-Infinity" | "NaN"} for that number. The cases run one after the other, or all at once when "parallel".
 * Each call writes "started ID" on stderr as it starts. The output maps each id to
 * {"ok": result} or {"error": {type, code, field, detail, message, retryAfterMs}}, with the
 * call's wall time in "ms"; a non-finite number is written as the text "non-finite VALUE", not
 * JSON's null.
 */

import { readFileSync } from "node:fs";

import {
  EvalserveClient,
  EvalserveError,
  type ClientOptions,
  type ListMetricsOptions,
  type Task,
} from "../src/index.js";

interface Case {
  readonly id: string;
  readonly target: string;
  readonly settings?: ClientOptions;
  readonly call: "evaluate" | "listMetrics";
  readonly task?: string;
  readonly yTrue?: unknown;
  readonly yScore?: unknown;
  readonly opts?: Record<string, unknown>;
}

type Outcome = ({ ok: unknown } | { error: Record<string, unknown> }) & { ms: number };

function decoded(value: unknown): unknown {
  if (Array.isArray(value)) {
    return value.map(decoded);
  }
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value);
    if (entries.length === 1 && entries[0]?.[0] === "f64") {
      const bytes = Buffer.from(String(entries[0][1]), "base64");
      const copy = new Uint8Array(bytes); // aligned, as Float64Array needs
      return new Float64Array(copy.buffer, 0, copy.byteLength / 8);
    }
    if (entries.length === 1 && entries[0]?.[0] === "number") {
      return Number(entries[0][1]);
    }
    return Object.fromEntries(entries.map(([key, item]) => [key, decoded(item)]));
  }
  return value;
}

async function run(client: EvalserveClient, spec: Case): Promise<unknown> {
  if (spec.call === "listMetrics") {
    if (spec.opts !== undefined) {
      return client.listMetrics(decoded(spec.opts) as ListMetricsOptions);
    }
    return spec.task === undefined ? client.listMetrics() : client.listMetrics(spec.task as Task);
  }
  const opts = decoded(spec.opts ?? {}) as Parameters<EvalserveClient["evaluate"]>[3];
  // the cases are written by the test: their shapes are the API's, checked by the server
  const evaluate = client.evaluate.bind(client) as (...args: unknown[]) => Promise<unknown>;
  return evaluate(spec.task, decoded(spec.yTrue), decoded(spec.yScore ?? null), opts);
}

function described(error: unknown): Record<string, unknown> {
  if (error instanceof EvalserveError) {
    return {
      type: error.constructor.name,
      code: error.code,
      field: error.field,
      detail: error.detail,
      message: error.message,
      retryAfterMs: error.retryAfterMs,
    };
  }
  return { type: "unexpected", message: String(error) };
}

async function outcome(client: EvalserveClient, spec: Case): Promise<Outcome> {
  process.stderr.write(`started ${spec.id}\n`);
  const started = performance.now();
  try {
    const ok = await run(client, spec);
    return { ok, ms: performance.now() - started };
  } catch (error) {
    return { error: described(error), ms: performance.now() - started };
  }
}

async function main(path: string): Promise<void> {
  const { cases, parallel } = JSON.parse(readFileSync(path, "utf8")) as {
    cases: Case[];
    parallel?: boolean;
  };
  const clients = new Map<string, EvalserveClient>();
  const clientOf = (spec: Case): EvalserveClient => {
    const key = JSON.stringify([spec.target, spec.settings ?? {}]);
    const client = clients.get(key) ?? new EvalserveClient(spec.target, spec.settings ?? {});
    clients.set(key, client);
    return client;
  };
  const results: Record<string, Outcome> = {};
  if (parallel === true) {
    const outcomes = await Promise.all(cases.map((spec) => outcome(clientOf(spec), spec)));
    cases.forEach((spec, index) => {
      results[spec.id] = outcomes[index] as Outcome;
    });
  } else {
    for (const spec of cases) {
      results[spec.id] = await outcome(clientOf(spec), spec);
    }
  }
  for (const client of clients.values()) {
    client.close();
  }
  // JSON.stringify would write a non-finite number as null, hiding it: write it as text, so a
  // result that holds one differs from the Python client's (which has null there)
  const visible = (_key: string, value: unknown): unknown =>
    typeof value === "number" && !Number.isFinite(value) ? `non-finite ${value}` : value;
  process.stdout.write(JSON.stringify({ results }, visible));
}

await main(process.argv[2] ?? "");
