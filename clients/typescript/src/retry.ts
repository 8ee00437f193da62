/**
 * When to try a call again: exponential backoff with full jitter, the server's retry hint as its
 * floor, and caps on the attempts and on the total time.
 *
 * Full jitter (Brooker, "Exponential Backoff and Jitter", AWS Architecture Blog, 2015): retry n
 * (from 0) waits `random(0, min(maxBackoffMs, backoffMs * 2 ** n))`. A server's hint (HTTP
 * `Retry-After`, RFC 9110 section 10.2.3, in seconds or as an HTTP date; gRPC's
 * `google.rpc.RetryInfo` detail or gRFC A6's `grpc-retry-pushback-ms` trailer) is a floor: the
 * wait is never shorter. A retry that would start later than `retryDeadlineMs` after the first
 * attempt is not made.
 */

export interface RetryPolicy {
  /** Retries after the first attempt. */
  readonly retries: number;
  /** The first retry's ceiling, in ms; each further one doubles it, up to `maxBackoffMs`. */
  readonly backoffMs: number;
  readonly maxBackoffMs: number;
  /** No retry starts later than this after the first attempt started, in ms. */
  readonly retryDeadlineMs: number;
}

/**
 * The wait before retry `retry` (0 for the first): uniform in [0, min(cap, base * 2^retry)),
 * the exponent held at 64 past 64 retries.
 */
export function fullJitter(
  retry: number,
  baseMs: number,
  capMs: number,
  random: () => number = Math.random,
): number {
  return Math.min(capMs, baseMs * 2 ** Math.min(retry, 64)) * random();
}

/**
 * The milliseconds of a `Retry-After` header: seconds or an HTTP date; null when absent or
 * unreadable, 0 for a date in the past.
 */
export function retryAfterMs(value: string | null, now: number = Date.now()): number | null {
  if (value === null) {
    return null;
  }
  const text = value.trim();
  if (/^\d+$/.test(text)) {
    return Number(text) * 1000;
  }
  // an HTTP date (IMF-fixdate, or the obsolete forms Date.parse reads): it names its weekday
  if (!/^[A-Za-z]{3}/.test(text)) {
    return null;
  }
  const when = Date.parse(text);
  return Number.isNaN(when) ? null : Math.max(0, when - now);
}

/** The status codes (as the errors' `code`) the channel's retry policy retries. Not
 * RESOURCE_EXHAUSTED: gRPC itself answers it for a message over the server's size limit,
 * without a pushback trailer, and a policy would send that message again; the client's loop
 * retries a RESOURCE_EXHAUSTED only when the server gave a retry hint. */
export const CHANNEL_RETRIED: readonly string[] = ["unavailable"];

/** The retries of one call: `pause(hintMs)` after each failed attempt says how long to wait
 * before the next one, or null when none is left (attempts or time). */
export class Schedule {
  /** Attempts made so far, the channel's retries included. */
  private attempts = 0;
  private readonly started: number;

  /** `perCall`: the attempts each of the loop's attempts stands for (gRPC's retry policy's
   * for a gRPC unary call, 1 otherwise); the loop then calls again only while that leaves
   * attempts of `retries + 1` to make, and its backoff goes on from theirs. */
  constructor(
    private readonly policy: RetryPolicy,
    private readonly clock: () => number = () => performance.now(),
    private readonly random: () => number = Math.random,
    private readonly perCall: number = 1,
  ) {
    this.started = clock();
  }

  /** `retried`: whether the channel's retry policy already retried the failed attempt (a gRPC
   * unary call refused with a status its policy retries); if not, it counts once. */
  pause(hintMs: number | null = null, retried = true): number | null {
    this.attempts += retried ? this.perCall : 1;
    if (this.attempts >= this.policy.retries + 1) {
      return null;
    }
    const exponent = this.attempts - 1;
    let wait = fullJitter(exponent, this.policy.backoffMs, this.policy.maxBackoffMs, this.random);
    if (hintMs !== null) {
      wait = Math.max(wait, hintMs);
    }
    if (this.clock() - this.started + wait > this.policy.retryDeadlineMs) {
      return null;
    }
    return wait;
  }
}

/** A policy's settings checked: numbers, none negative. */
export function checkedPolicy(policy: RetryPolicy): RetryPolicy {
  for (const [name, value] of Object.entries(policy)) {
    if (typeof value !== "number" || !(value >= 0)) {
      throw new RangeError(`${name}: must be a number >= 0`);
    }
  }
  return policy;
}
