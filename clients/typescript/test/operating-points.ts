/**
 * Prints what operating-points.ts makes of given targets and answers, and the options a
 * request sends, for tests/clients/test_operating_points.py (no server).
 *
 *     tsx test/operating-points.ts INPUT.json
 *
 * INPUT.json: {"targets": [number | "nan" | "inf" | "-inf"], "answers": [{"result":
 * EvaluationResult | ClassRow, "calls": [{"kind": "point" | "flagged", "option"?, "target",
 * "className"?}]}], "options": [Options]}; "nan", "inf" and "-inf" stand for those numbers
 * (targets, and values of options). The output: {"names": [formatTarget of each target],
 * "answers": [[OperatingPoint | FlaggedShare | {"error": message}]], "options": [{"json":
 * options of the REST body, "proto": the proto message's options as JSON} | {"error": ...}]}.
 */

import { readFileSync } from "node:fs";

import { toJson as messageJson } from "@bufbuild/protobuf";

import { EvaluateRequestSchema } from "../src/gen/evalserve/v1/evaluation_pb.js";
import { toJson } from "../src/json-request.js";
import {
  flaggedShare,
  formatTarget,
  operatingPoint,
  type OperatingOption,
} from "../src/operating-points.js";
import { toProto } from "../src/proto-request.js";
import { rowsRequest } from "../src/request.js";
import type { ClassRow, EvaluationResult, Options } from "../src/types.js";

interface Call {
  readonly kind: "point" | "flagged";
  readonly option?: OperatingOption;
  readonly target: number;
  readonly className?: string;
}

interface Input {
  readonly targets: readonly (number | string)[];
  readonly answers: readonly { result: EvaluationResult | ClassRow; calls: readonly Call[] }[];
  readonly options: readonly Options[];
}

const SPECIAL: Record<string, number> = { nan: NaN, inf: Infinity, "-inf": -Infinity };

function attempt(run: () => unknown): unknown {
  try {
    return run();
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}

const input = JSON.parse(readFileSync(process.argv[2] as string, "utf8")) as Input;

const names = input.targets.map((target) =>
  formatTarget(typeof target === "string" ? (SPECIAL[target] as number) : target),
);

const answers = input.answers.map(({ result, calls }) =>
  calls.map((call) =>
    attempt(() => {
      const where = call.className === undefined ? undefined : { className: call.className };
      return call.kind === "flagged"
        ? flaggedShare(result, call.target, where)
        : operatingPoint(result, call.option as OperatingOption, call.target, where);
    }),
  ),
);

/** The options with each "nan", "inf" and "-inf" (in a list too) as that number. */
function special(given: Options): Options {
  const read = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(read)
      : typeof value === "string" && value in SPECIAL
        ? SPECIAL[value]
        : value;
  return Object.fromEntries(Object.entries(given).map(([key, value]) => [key, read(value)]));
}

const options = input.options.map((given) =>
  attempt(() => {
    const request = rowsRequest("binary", [0, 1], [0.2, 0.7], { options: special(given) });
    const proto = messageJson(EvaluateRequestSchema, toProto(request)) as Record<string, unknown>;
    return { json: toJson(request)["options"], proto: proto["options"] ?? null };
  }),
);

process.stdout.write(JSON.stringify({ names, answers, options }));
