/**
 * Prints what retry.ts computes, for tests/clients/test_typescript_retries.py: the waits of
 * `fullJitter` over many real draws (with their ceilings), `retryAfterMs` of given header
 * values at a fixed time, the pauses of a `Schedule` on a fake clock, and the gRPC unary
 * channel's options (its retry policy).
 *
 *     tsx test/schedule.ts
 */

import { channelOptions } from "../src/grpc-unary.js";
import { fullJitter, retryAfterMs, Schedule } from "../src/retry.js";

const NOW = Date.UTC(2026, 0, 2, 3, 4, 5);

const jitter = [0, 1, 2, 3, 4, 5, 10, 40].map((retry) => ({
  retry,
  ceiling: Math.min(5000, 200 * 2 ** retry),
  waits: Array.from({ length: 200 }, () => fullJitter(retry, 200, 5000)),
}));

const headers = ["7", " 0 ", "soon", "-3", new Date(NOW + 90_000).toUTCString(),
  new Date(NOW - 90_000).toUTCString()];
const retryAfter = headers.map((value) => [value, retryAfterMs(value, NOW)]);

let now = 0;
const schedule = new Schedule(
  { retries: 3, backoffMs: 1000, maxBackoffMs: 4000, retryDeadlineMs: 1_000_000 },
  () => now,
  () => 0.5,
);
const pauses = [schedule.pause(), schedule.pause(3000), schedule.pause(100), schedule.pause()];
now = 0;
const capped = new Schedule(
  { retries: 100, backoffMs: 1000, maxBackoffMs: 1000, retryDeadlineMs: 10_000 },
  () => now,
  () => 0.9,
);
now = 9000;
const beforeDeadline = capped.pause();
now = 9950;
const pastDeadline = capped.pause();

// a gRPC unary call's schedule: retries=8 with gRPC's 5 attempts a call gives one more call
now = 0;
const grpcUnary = new Schedule(
  { retries: 8, backoffMs: 1000, maxBackoffMs: 100_000, retryDeadlineMs: 1_000_000 },
  () => now,
  () => 0.5,
  5,
);
const unaryPauses = [grpcUnary.pause(), grpcUnary.pause()];

const options = [3, 9, 0].map((retries) =>
  channelOptions({ retries, backoffMs: 250, maxBackoffMs: 4000 }),
);

process.stdout.write(
  JSON.stringify({
    jitter,
    retryAfter,
    pauses,
    deadline: [beforeDeadline, pastDeadline],
    unaryPauses,
    options,
  }),
);
