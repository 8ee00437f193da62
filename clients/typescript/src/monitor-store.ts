/**
 * `MonitorStates`: the AUC monitor's state of each model, kept for the caller between calls;
 * in memory by default, or in a JSON file (`new MonitorStates({ path })`, the Python client's
 * format: monitor-file.ts) that outlives the process and that processes may share.
 *
 * One state per model and question (monitor-key.ts): a new baseline starts a new monitor and
 * the old one stays, resumed if that baseline comes back. A segmented call's segments are
 * models too: the segment `de` of model `m` is kept under the key (`m`, its version, `de`),
 * beside the model's overall monitor (segment ""). Each model keeps its `keep` most
 * recently updated monitors, and as many states set aside (`retired`: refused by the server,
 * with the reason); older ones are dropped.
 */

import { emptyDocument, readDocument, withLock, writeDocument } from "./monitor-file.js";
import { modelKey, sameModel, type ModelKey } from "./monitor-key.js";
import type { Model } from "./types.js";

/** One model's monitor, as the state file holds it (the state as base64). */
export interface MonitorEntry {
  readonly model: ModelKey;
  /** The fingerprint of the baseline and options the state was made for. */
  readonly question: string;
  /** Base64: send it with the next window. */
  readonly state: string;
  /** The last window counted. */
  readonly window: string;
  readonly windows: number;
  readonly statistic: number;
  readonly threshold: number;
  readonly alarm: boolean;
  /** ISO 8601, UTC. */
  readonly updated: string;
  readonly drift_tolerance: number | null;
  readonly monitor_arl_windows: number | null;
  /** Why the state was set aside; null for a live monitor. */
  readonly retired: string | null;
}

export interface MonitorStatesOptions {
  /** The JSON file to keep the states in (default: memory, for the process's life). */
  readonly path?: string;
  /** Monitors (and set-aside states) kept per model (default 16). */
  readonly keep?: number;
  /** How long a writer waits for another's lock, in ms (default 30 000). */
  readonly lockTimeoutMs?: number;
}

interface Data {
  live: MonitorEntry[];
  retired: MonitorEntry[];
}

function keyOf(entry: Pick<MonitorEntry, "model" | "question">): string {
  const { name, version, segment } = entry.model;
  return JSON.stringify([name, version, segment, entry.question]);
}

function entryOf(raw: unknown): MonitorEntry {
  const entry = raw as MonitorEntry;
  if (typeof entry?.state !== "string" || typeof entry.question !== "string") {
    throw new Error(`not a monitor entry: ${JSON.stringify(raw)}`);
  }
  return { ...entry, model: modelKey(entry.model) };
}

function compareModels(a: ModelKey, b: ModelKey): number {
  const left = [a.name, a.version, a.segment].join("\u0000");
  const right = [b.name, b.version, b.segment].join("\u0000");
  return left < right ? -1 : left > right ? 1 : 0;
}

function ordered(entries: readonly MonitorEntry[]): MonitorEntry[] {
  return [...entries].sort(
    (a, b) =>
      compareModels(a.model, b.model) ||
      (a.updated < b.updated ? -1 : a.updated > b.updated ? 1 : 0),
  );
}

/** Each model's `keep` newest entries. */
function newest(entries: readonly MonitorEntry[], keep: number): MonitorEntry[] {
  const counts = new Map<string, number>();
  const kept = [...entries]
    .sort((a, b) => (a.updated < b.updated ? 1 : a.updated > b.updated ? -1 : 0))
    .filter((entry) => {
      const model = keyOf({ model: entry.model, question: "" });
      const count = (counts.get(model) ?? 0) + 1;
      counts.set(model, count);
      return count <= keep;
    });
  return ordered(kept);
}

export function now(): string {
  return new Date().toISOString().replace("Z", "000Z");
}

export class MonitorStates {
  readonly path: string | null;
  readonly keep: number;
  readonly lockTimeoutMs: number;
  private memory: Data = { live: [], retired: [] };

  constructor(options: MonitorStatesOptions = {}) {
    this.path = options.path ?? null;
    this.keep = options.keep ?? 16;
    this.lockTimeoutMs = options.lockTimeoutMs ?? 30_000;
    if (!(this.keep >= 1)) {
      throw new TypeError(`keep: expected at least 1, but got ${this.keep}`);
    }
  }

  private async read(): Promise<Data> {
    if (this.path === null) {
      return { live: [...this.memory.live], retired: [...this.memory.retired] };
    }
    const document = await readDocument(this.path);
    return { live: document.monitors.map(entryOf), retired: document.retired.map(entryOf) };
  }

  /** Apply `change` to the newest data and keep the result, atomically. */
  private async change<T>(change: (data: Data) => T): Promise<T> {
    const apply = (data: Data): T => {
      const found = change(data);
      data.live = newest(data.live, this.keep);
      data.retired = newest(data.retired, this.keep);
      return found;
    };
    const path = this.path;
    if (path === null) {
      return apply(this.memory); // synchronous: no other call runs in between
    }
    return withLock(path, this.lockTimeoutMs, async () => {
      const data = await this.read();
      const found = apply(data);
      await writeDocument(path, { ...emptyDocument(), monitors: data.live, retired: data.retired });
      return found;
    });
  }

  /** Every monitor kept, by model, oldest first. */
  async entries(): Promise<MonitorEntry[]> {
    return ordered((await this.read()).live);
  }

  /** The states set aside (refused by the server), with why. */
  async retired(): Promise<MonitorEntry[]> {
    return ordered((await this.read()).retired);
  }

  /** The model's most recently updated monitor. */
  async latest(model: Model | ModelKey): Promise<MonitorEntry | null> {
    const key = modelKey(model);
    const mine = (await this.read()).live.filter((entry) => sameModel(entry.model, key));
    return mine.reduce<MonitorEntry | null>(
      (best, entry) => (best === null || entry.updated > best.updated ? entry : best),
      null,
    );
  }

  async get(model: Model | ModelKey, question: string): Promise<MonitorEntry | null> {
    const key = keyOf({ model: modelKey(model), question });
    return (await this.read()).live.find((entry) => keyOf(entry) === key) ?? null;
  }

  /** The monitors of `keys` that are kept, read at once, in the order of `keys`. */
  async getAll(
    keys: readonly { readonly model: ModelKey; readonly question: string }[],
  ): Promise<(MonitorEntry | null)[]> {
    const live = new Map((await this.read()).live.map((entry) => [keyOf(entry), entry]));
    return keys.map((key) => live.get(keyOf(key)) ?? null);
  }

  /** Keep every one of `entries` if each monitor of `expected` still has that stored state
   * (null: none), in one change; otherwise keep nothing and return false. */
  swapAll(
    entries: readonly MonitorEntry[],
    expected: readonly { model: ModelKey; question: string; state: string | null }[],
  ): Promise<boolean> {
    return this.change((data) => {
      const live = new Map(data.live.map((entry) => [keyOf(entry), entry]));
      if (expected.some((want) => (live.get(keyOf(want))?.state ?? null) !== want.state)) {
        return false;
      }
      const keys = new Set(entries.map(keyOf));
      data.live = [...data.live.filter((found) => !keys.has(keyOf(found))), ...entries];
      return true;
    });
  }

  /** Drop every monitor and set-aside state of `model`. */
  async forget(model: Model): Promise<void> {
    const key = modelKey(model);
    await this.change((data) => {
      data.live = data.live.filter((entry) => !sameModel(entry.model, key));
      data.retired = data.retired.filter((entry) => !sameModel(entry.model, key));
    });
  }

  /** Keep `entry` if its monitor's stored state is still `expected` (null: none); otherwise
   * keep nothing and return the newer entry another call stored meanwhile. */
  swap(entry: MonitorEntry, expected: string | null): Promise<MonitorEntry | null> {
    return this.change((data) => {
      const key = keyOf(entry);
      const current = data.live.find((found) => keyOf(found) === key) ?? null;
      if ((current?.state ?? null) !== expected) {
        return current;
      }
      data.live = [...data.live.filter((found) => keyOf(found) !== key), entry];
      return null;
    });
  }

  /** Set the monitor's stored state aside (if it is still `state`), saying why. */
  async retire(model: ModelKey, question: string, state: string, reason: string): Promise<void> {
    const key = keyOf({ model, question });
    await this.change((data) => {
      const current = data.live.find((found) => keyOf(found) === key);
      if (current !== undefined && current.state === state) {
        data.live = data.live.filter((found) => found !== current);
        data.retired.push({ ...current, retired: reason, updated: now() });
      }
    });
  }
}
