/**
 * One call's part in its model's AUC monitor, as the Python client's `_monitoring`: a binary
 * call with a `model` and a `baseline` sends the state stored for its model and question, or
 * none for a first window, and a window id (the caller's, or one made for the call) that every
 * attempt of the call repeats, so the server counts the window once.
 *
 * - A new baseline or new monitor options: a new monitor; the previous one stays in the store
 *   (`monitor_restarted` says so).
 * - A stored state the server refuses (`monitor_state`): set aside in the store's retired list
 *   with the server's reason, and the window sent again with no state (a new monitor).
 * - A segmented call keeps one monitor per segment beside the model's overall one (the segment's
 *   name is the model key's `segment`): it sends the stored state of each segment it names (and
 *   of `__other__` when folding) as `segment_monitor_states`, and stores each segment's answer
 *   with the overall one, in one change. A segment's state refused by name
 *   (`segment_monitor_states.<name>`) is set aside and the window sent again without it; a
 *   state refused as `monitor_state` in a segmented call (the server does not say whose) sets
 *   aside every state sent. A state of a segment the rows lack (folded) is not sent again for
 *   this window, and stays in the store.
 * - Another call stored a newer state meanwhile: the window is sent again on that state, so no
 *   window's evidence is lost.
 */

import { EvalserveError } from "./errors.js";
import { fingerprint, modelKey, MONITOR_OPTIONS, newWindow, type ModelKey } from "./monitor-key.js";
import { now, type MonitorEntry, type MonitorStates } from "./monitor-store.js";
import type { Request } from "./request.js";
import type { EvaluationResult } from "./types.js";

/** Sends of one window on a newer state before the call gives up. */
export const MAX_RESENDS = 8;
/** The segment the server folds the smallest segments into (`foldSegments`). */
const OTHER = "__other__";
const SEGMENT_FIELD = "segment_monitor_states";

/** The segments a request names (none: not segmented), `__other__` when it folds. */
function segmentNames(request: Request): string[] {
  let names: readonly string[] = request.segments ?? [];
  if (names.length === 0 && request.segmentNames !== null) {
    const listed = request.segmentNames;
    const codes = request.segmentCodes ?? [];
    // the names the codes use (all of them without codes: the server says what is wrong)
    names = codes.length === 0 ? listed : codes.map((code) => listed[code] ?? "").filter(Boolean);
  }
  if (names.length === 0) {
    return [];
  }
  const distinct = [...new Set(names)].sort();
  return request.foldSegments && !distinct.includes(OTHER) ? [...distinct, OTHER] : distinct;
}

export class Track {
  restarted: string | null = null;
  private resends = 0;
  /** A segmented call's segments, the states sent by name, and why a segment restarted. */
  private segments: string[] = [];
  private segmentStates = new Map<string, string>();
  private readonly segmentRestarted = new Map<string, string>();

  private constructor(
    private readonly store: MonitorStates,
    readonly model: ModelKey,
    readonly question: string,
    readonly window: string,
    public state: string | null,
    private readonly options: Readonly<Record<string, number>>,
  ) {}

  /** The call's track, or null when it is not monitored (no binary task, model or baseline). */
  static async start(
    store: MonitorStates,
    request: Request,
    window: string | null,
  ): Promise<Track | null> {
    if (request.task !== "binary" || request.model === null || request.baseline === null) {
      return null;
    }
    const model = modelKey(request.model);
    const question = fingerprint(request.baseline, request.options);
    const options: Record<string, number> = {};
    for (const name of MONITOR_OPTIONS) {
      const value = request.options?.[name];
      if (value != null) {
        options[name] = value;
      }
    }
    const entry = await store.get(model, question);
    const track = new Track(store, model, question, window ?? newWindow(), null, options);
    track.segments = segmentNames(request);
    await track.loadSegments();
    if (entry !== null) {
      track.state = entry.state;
      return track;
    }
    const latest = await store.latest(model);
    if (latest !== null) {
      track.restarted =
        "a new monitor started: the baseline or the monitor's options differ from those of " +
        `this model's last monitor (window '${latest.window}', ${latest.windows} windows), ` +
        "which stays in the store";
    }
    return track;
  }

  private segmentKey(name: string): { model: ModelKey; question: string } {
    return { model: { ...this.model, segment: name }, question: this.question };
  }

  /** The stored state of each segment this call names. */
  private async loadSegments(): Promise<void> {
    const stored = await this.store.getAll(this.segments.map((name) => this.segmentKey(name)));
    this.segmentStates = new Map();
    stored.forEach((entry, index) => {
      if (entry !== null) {
        this.segmentStates.set(this.segments[index] as string, entry.state);
      }
    });
  }

  /** `request` carrying this track's states and window. */
  request(request: Request): Request {
    const states = this.segmentStates.size > 0 ? Object.fromEntries(this.segmentStates) : null;
    return {
      ...request,
      monitorState: this.state,
      window: this.window,
      segmentMonitorStates: states,
    };
  }

  private async retireSegment(name: string, reason: string): Promise<void> {
    const state = this.segmentStates.get(name) as string;
    this.segmentStates.delete(name);
    const { model, question } = this.segmentKey(name);
    await this.store.retire(model, question, state, reason);
    this.segmentRestarted.set(
      name,
      `a new monitor started: the server refused this segment's stored state (${reason}); ` +
        "that state is kept in the store's retired list",
    );
  }

  /** Whether to send the window again as a new monitor's first: the server refused the state
   * sent (which is set aside in the store, with the server's reason). */
  async refused(error: unknown): Promise<boolean> {
    if (!(error instanceof EvalserveError)) {
      return false;
    }
    const field = error.field ?? "";
    if (field === SEGMENT_FIELD) {
      // a state of a segment the rows lack (folded, say): not sent this time, and kept
      const lacking = [...this.segmentStates.keys()].filter(
        (name) => error.detail.includes(`'${name}'`) || error.detail.includes(`"${name}"`),
      );
      lacking.forEach((name) => this.segmentStates.delete(name));
      return lacking.length > 0;
    }
    if (field.startsWith(`${SEGMENT_FIELD}.`)) {
      const name = field.slice(SEGMENT_FIELD.length + 1);
      if (!this.segmentStates.has(name)) {
        return false;
      }
      await this.retireSegment(name, error.detail);
      return true;
    }
    if (field !== "monitor_state" || (this.state === null && this.segmentStates.size === 0)) {
      return false;
    }
    // the state of the model or of one of its segments: the server does not say which, and
    // what makes one stale (a new monitor version, a changed server default) makes all so
    for (const name of [...this.segmentStates.keys()]) {
      await this.retireSegment(name, error.detail);
    }
    if (this.state === null) {
      return true;
    }
    await this.store.retire(this.model, this.question, this.state, error.detail);
    this.restarted =
      `a new monitor started: the server refused this model's stored state (${error.detail}); ` +
      "that state is kept in the store's retired list";
    this.state = null;
    return true;
  }

  /** The monitor entry of an answer (overall or a segment's), if it has a state. */
  private entry(model: ModelKey, answer: EvaluationResult): MonitorEntry | null {
    const verdict = Object.values(answer.monitor ?? {})[0];
    const state = answer.monitor_state ?? null;
    if (state === null || verdict === undefined) {
      return null; // a server without the monitor, or a segment with no monitor
    }
    return {
      model,
      question: this.question,
      state,
      window: this.window,
      windows: verdict.windows,
      statistic: verdict.statistic,
      threshold: verdict.threshold,
      alarm: verdict.alarm,
      updated: now(),
      drift_tolerance: this.options["drift_tolerance"] ?? null,
      monitor_arl_windows: this.options["monitor_arl_windows"] ?? null,
      retired: null,
    };
  }

  /** Store the answer's states (overall and each segment's, at once); false when another call
   * stored a newer state meanwhile: then send the window again, on the newer states. */
  async settle(answer: EvaluationResult): Promise<boolean> {
    const entries: MonitorEntry[] = [];
    const expected: { model: ModelKey; question: string; state: string | null }[] = [];
    const overall = this.entry(this.model, answer);
    if (overall !== null) {
      entries.push(overall);
      expected.push({ model: this.model, question: this.question, state: this.state });
    }
    for (const [name, each] of Object.entries(answer.segments ?? {})) {
      const entry = this.entry({ ...this.model, segment: name }, each);
      if (entry !== null) {
        entries.push(entry);
        expected.push({ ...this.segmentKey(name), state: this.segmentStates.get(name) ?? null });
      }
    }
    if (entries.length === 0 || (await this.store.swapAll(entries, expected))) {
      return true;
    }
    this.resends += 1;
    if (this.resends > MAX_RESENDS) {
      throw new EvalserveError(
        `other calls kept changing this model's monitor state: window '${this.window}' was ` +
          `sent ${this.resends} times and not stored`,
        { field: "monitor_state", code: "monitor_conflict" },
      );
    }
    this.state = (await this.store.get(this.model, this.question))?.state ?? null;
    await this.loadSegments();
    return false;
  }

  /** The answer with the call's own fields. */
  result(answer: EvaluationResult): EvaluationResult {
    const result = { ...answer, window: this.window, monitor_restarted: this.restarted };
    if (answer.segments === undefined) {
      return result;
    }
    const segments = Object.fromEntries(
      Object.entries(answer.segments).map(([name, each]) => [
        name,
        {
          ...each,
          window: this.window,
          monitor_restarted: this.segmentRestarted.get(name) ?? null,
        },
      ]),
    );
    return { ...result, segments };
  }
}
