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
 * - Another call stored a newer state meanwhile: the window is sent again on that state, so no
 *   window's evidence is lost.
 */

import { EvalserveError } from "./errors.js";
import { fingerprint, modelKey, MONITOR_OPTIONS, newWindow, type ModelKey } from "./monitor-key.js";
import { now, type MonitorStates } from "./monitor-store.js";
import type { Request } from "./request.js";
import type { EvaluationResult } from "./types.js";

/** Sends of one window on a newer state before the call gives up. */
export const MAX_RESENDS = 8;

export class Track {
  restarted: string | null = null;
  private resends = 0;

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

  /** `request` carrying this track's state and window. */
  request(request: Request): Request {
    return { ...request, monitorState: this.state, window: this.window };
  }

  /** Whether to send the window again as a new monitor's first: the server refused the state
   * sent (which is set aside in the store, with the server's reason). */
  async refused(error: unknown): Promise<boolean> {
    if (this.state === null || !(error instanceof EvalserveError)) {
      return false;
    }
    if (error.field !== "monitor_state") {
      return false;
    }
    await this.store.retire(this.model, this.question, this.state, error.detail);
    this.restarted =
      `a new monitor started: the server refused this model's stored state (${error.detail}); ` +
      "that state is kept in the store's retired list";
    this.state = null;
    return true;
  }

  /** Store the answer's state; false when another call stored a newer state meanwhile: then
   * send the window again, on that state (now `this.state`). */
  async settle(answer: EvaluationResult): Promise<boolean> {
    const verdict = Object.values(answer.monitor ?? {})[0];
    const state = answer.monitor_state ?? null;
    if (state === null || verdict === undefined) {
      return true; // a server without the monitor
    }
    const newer = await this.store.swap(
      {
        model: this.model,
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
      },
      this.state,
    );
    if (newer === null) {
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
    this.state = newer.state;
    return false;
  }

  /** The answer with the call's own fields. */
  result(answer: EvaluationResult): EvaluationResult {
    return { ...answer, window: this.window, monitor_restarted: this.restarted };
  }
}
