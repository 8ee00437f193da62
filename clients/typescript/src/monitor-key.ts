/**
 * What a monitor's state is valid for: the model it watches (name, version, segment) and the
 * question it answers (the baseline and the options `drift_tolerance` and
 * `monitor_arl_windows`), reduced to a fingerprint: SHA-256 of the canonical text the Python
 * client writes too (so either client reads the other's state file):
 *
 *     evalserve-monitor-question/1
 *     baseline.<name>=<hex of the value(s) as little-endian float64>   (names sorted)
 *     options.drift_tolerance=<hex>                                     (when given)
 *     options.monitor_arl_windows=<hex>                                 (when given)
 */

import { createHash, randomBytes } from "node:crypto";

import { f64Bytes, floats } from "./f64.js";
import type { Baseline, Column, Model, Options } from "./types.js";

export const MONITOR_OPTIONS = ["drift_tolerance", "monitor_arl_windows"] as const;
const HEADER = "evalserve-monitor-question/1";

/** A model as the service names it; an absent version or segment is "". */
export interface ModelKey {
  readonly name: string;
  readonly version: string;
  readonly segment: string;
}

export function modelKey(model: Partial<Model>): ModelKey {
  return { name: model.name ?? "", version: model.version ?? "", segment: model.segment ?? "" };
}

export function sameModel(a: ModelKey, b: ModelKey): boolean {
  return a.name === b.name && a.version === b.version && a.segment === b.segment;
}

function hex(value: number | Column): string {
  const column = typeof value === "number" ? [value] : value;
  return Buffer.from(f64Bytes(Float64Array.from(floats(column)))).toString("hex");
}

/** The question a monitor's state answers, as 64 hex digits (see the module's doc). */
export function fingerprint(baseline: Baseline, options: Options | null): string {
  const given = Object.entries(baseline).filter(([, value]) => value != null) as [
    string,
    number | Column,
  ][];
  given.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const lines = [HEADER, ...given.map(([key, value]) => `baseline.${key}=${hex(value)}`)];
  for (const name of MONITOR_OPTIONS) {
    const value = options?.[name];
    if (value != null) {
      lines.push(`options.${name}=${hex(value)}`);
    }
  }
  return createHash("sha256").update(lines.join("\n")).digest("hex");
}

/** A window id for a call that named none: its start time (UTC) and a random tag. */
export function newWindow(): string {
  const now = new Date().toISOString().replace("Z", "000Z"); // microseconds, as Python's
  return `${now}/${randomBytes(4).toString("hex")}`;
}
