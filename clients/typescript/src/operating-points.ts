/**
 * Operating points of an answer: the metrics that the list options `recall_at_precision`,
 * `precision_at_recall`, `tpr_at_fpr`, `specificity_at_sensitivity` and `flagged_share` ask
 * for, read by option and target instead of by name.
 *
 * The server names each metric after its option and target, the target written as the core
 * (Python) writes it, which `formatTarget` reproduces: `recall_at_precision_0.95` and
 * `recall_at_precision_0.95_threshold`; `flagged_share_0.05_threshold`,
 * `flagged_share_0.05_actual`, `precision_at_flagged_share_0.05` and
 * `recall_at_flagged_share_0.05`. Multiclass and multilabel answers carry them in each class
 * row, and their macro average in `metrics` as `{name}_macro`. The Python client
 * (`evalserve_client._operating`) reads them the same way.
 */

import type { ClassRow, EvaluationResult, Interval } from "./types.js";

/** The options whose targets give an operating point (a value at a threshold). */
export type OperatingOption =
  | "recall_at_precision"
  | "precision_at_recall"
  | "tpr_at_fpr"
  | "specificity_at_sensitivity";

export const OPERATING_OPTIONS: readonly OperatingOption[] = [
  "recall_at_precision",
  "precision_at_recall",
  "tpr_at_fpr",
  "specificity_at_sensitivity",
];

/** The tasks whose answers hold the operating points per class, averaged in `{name}_macro`. */
const PER_CLASS_TASKS: readonly string[] = ["multiclass", "multilabel"];

/**
 * One operating point: `value` (the recall of `recall_at_precision`, say) at the `threshold`
 * that reaches it, and the value's `interval` when the server sent one. Where no threshold
 * meets the target, `value` and `threshold` are null and `reason` says why (the answer's
 * `undefined`). `name` is the value's metric in the answer (with its `_macro` suffix when read
 * from a multiclass or multilabel answer's metrics); `className` the class row read, or null.
 */
export interface OperatingPoint {
  readonly option: OperatingOption;
  readonly target: number;
  readonly name: string;
  readonly value: number | null;
  readonly threshold: number | null;
  readonly interval: Interval | null;
  readonly reason: string | null;
  readonly className: string | null;
}

/**
 * An alert budget: the lowest `threshold` that flags at most `share` of the rows (in sample
 * weight), the share it really `flagged`, and the `precision` and `recall` there. Undefined
 * values are null, with `reason` from the answer's `undefined`.
 */
export interface FlaggedShare {
  readonly share: number;
  readonly threshold: number | null;
  readonly flagged: number | null;
  readonly precision: number | null;
  readonly recall: number | null;
  readonly reason: string | null;
  readonly className: string | null;
}

/** Where to read: the answer's metrics (macro in multiclass and multilabel) or a class's. */
export interface OperatingPointOptions {
  /** The class row of this name (multiclass, multilabel). */
  readonly className?: string;
}

/**
 * A target as metric names write it, as the core (Python) does: a whole number without ".0"
 * (`1`), any other as Python's `repr` of the float (`0.95`, `0.001`, `1e-05`, where JavaScript
 * would write `0.00001`), so that distinct targets never share a name.
 */
export function formatTarget(target: number): string {
  if (Number.isInteger(target) && Math.abs(target) < 1e15) {
    return String(target); // String(-0) is "0", as Python's str(int(-0.0))
  }
  if (Number.isNaN(target)) {
    return "nan";
  }
  if (!Number.isFinite(target)) {
    return target > 0 ? "inf" : "-inf";
  }
  return pythonRepr(target);
}

/**
 * Python's `repr` of a finite float. Both languages print the shortest digits that read back
 * as the same double (the closest such digits when several are as short), so the digits are
 * JavaScript's; only the layout differs: Python writes an exponent when the decimal point
 * would sit more than 4 places left of the first digit or after its 16th digit (`1e-05`,
 * `1e+16`; JavaScript from 7 places and 21 digits: `0.00001`), always signed and with at
 * least two digits, and ends a whole float with ".0".
 */
function pythonRepr(value: number): string {
  const sign = value < 0 ? "-" : "";
  const [mantissa = "", exponent = "0"] = String(Math.abs(value)).split("e");
  const [whole = "", fraction = ""] = mantissa.split(".");
  // value = 0.DIGITS * 10^point
  let digits = whole + fraction;
  let point = whole.length + Number(exponent);
  const leading = digits.length - digits.replace(/^0+/, "").length;
  digits = digits.slice(leading).replace(/0+$/, "");
  point -= leading;
  if (point <= -4 || point > 16) {
    const power = point - 1;
    const rest = digits.length > 1 ? `.${digits.slice(1)}` : "";
    const shown = String(Math.abs(power)).padStart(2, "0");
    return `${sign}${digits[0] ?? "0"}${rest}e${power < 0 ? "-" : "+"}${shown}`;
  }
  if (point <= 0) {
    return `${sign}0.${"0".repeat(-point)}${digits}`;
  }
  if (point >= digits.length) {
    return `${sign}${digits}${"0".repeat(point - digits.length)}.0`;
  }
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}

interface Source {
  readonly metrics: Readonly<Record<string, unknown>>;
  readonly undefined: Readonly<Record<string, string>>;
  readonly intervals: Readonly<Record<string, Interval>>;
  readonly suffix: string;
  readonly className: string | null;
}

function isRow(source: EvaluationResult | ClassRow): source is ClassRow {
  return !("per_class" in source);
}

function sourceOf(
  from: EvaluationResult | ClassRow,
  options: OperatingPointOptions | undefined,
): Source {
  if (isRow(from)) {
    const { undefined: reasons, intervals } = from;
    return { metrics: from, undefined: reasons, intervals, suffix: "", className: from.class };
  }
  const className = options?.className;
  if (className === undefined) {
    const suffix = PER_CLASS_TASKS.includes(from.task) ? "_macro" : "";
    const { metrics, undefined: reasons, intervals } = from;
    return { metrics, undefined: reasons, intervals, suffix, className: null };
  }
  const row = from.per_class.find((r) => r.class === className);
  if (row === undefined) {
    const names = JSON.stringify(from.per_class.map((r) => r.class));
    throw new Error(`no class "${className}" in the answer's per_class; its classes: ${names}`);
  }
  const { undefined: reasons, intervals } = row;
  return { metrics: row, undefined: reasons, intervals, suffix: "", className };
}

function numberOrNull(value: unknown): number | null {
  return typeof value === "number" ? value : null;
}

function valueOf(source: Source, name: string, option: string, target: number): number | null {
  const full = name + source.suffix;
  if (!(full in source.metrics) && !(full in source.undefined)) {
    const where = source.className === null ? "" : ` of class "${source.className}"`;
    throw new Error(
      `${full}${where} is not in the answer: send options { ${option}: ` +
        `[${formatTarget(target)}] } to a server that answers it`,
    );
  }
  return numberOrNull(source.metrics[full]);
}

function reasonOf(source: Source, names: readonly string[]): string | null {
  for (const name of names) {
    const reason = source.undefined[name + source.suffix];
    if (reason !== undefined) {
      return reason;
    }
  }
  return null;
}

function checkedTarget(target: number): number {
  if (typeof target !== "number") {
    throw new TypeError(`expected a number as the target, but got ${String(target)}`);
  }
  return target;
}

/**
 * The operating point that the option `option` asked for at `target`, in an answer (binary;
 * the macro average of a multiclass or multilabel one, or the row of `className`) or in a class
 * row: its value, threshold and interval, null where undefined with the `reason`. Throws when
 * the answer does not hold it (the option was not sent with that target).
 */
export function operatingPoint(
  from: EvaluationResult | ClassRow,
  option: OperatingOption,
  target: number,
  options?: OperatingPointOptions,
): OperatingPoint {
  if ((option as string) === "flagged_share") {
    throw new Error("flagged_share is an alert budget: read it with flaggedShare(from, target)");
  }
  if (!OPERATING_OPTIONS.includes(option)) {
    const known = OPERATING_OPTIONS.map((o) => `'${o}'`).join(", ");
    throw new Error(`expected one of [${known}], but got '${String(option)}'`);
  }
  const source = sourceOf(from, options);
  const name = `${option}_${formatTarget(checkedTarget(target))}`;
  const value = valueOf(source, name, option, target);
  const threshold = numberOrNull(source.metrics[`${name}_threshold${source.suffix}`]);
  const undefinedHere = value === null || threshold === null;
  return {
    option,
    target,
    name: name + source.suffix,
    value,
    threshold,
    interval: source.intervals[name + source.suffix] ?? null,
    reason: undefinedHere ? reasonOf(source, [name, `${name}_threshold`]) : null,
    className: source.className,
  };
}

/**
 * The alert budget that the option `flagged_share` asked for at `share`: the threshold flagging
 * at most that share of the rows, the share it flags, and the precision and recall there
 * (macro, or a class's, as `operatingPoint`).
 */
export function flaggedShare(
  from: EvaluationResult | ClassRow,
  share: number,
  options?: OperatingPointOptions,
): FlaggedShare {
  const source = sourceOf(from, options);
  const label = formatTarget(checkedTarget(share));
  const names = [
    `flagged_share_${label}_threshold`,
    `flagged_share_${label}_actual`,
    `precision_at_flagged_share_${label}`,
    `recall_at_flagged_share_${label}`,
  ] as const;
  const [threshold, flagged, precision, recall] = names.map((name) =>
    valueOf(source, name, "flagged_share", share),
  ) as [number | null, number | null, number | null, number | null];
  const undefinedHere = [threshold, flagged, precision, recall].includes(null);
  return {
    share,
    threshold,
    flagged,
    precision,
    recall,
    reason: undefinedHere ? reasonOf(source, names) : null,
    className: source.className,
  };
}
