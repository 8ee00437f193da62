/** Numeric columns as the wire carries them: float64, little-endian, raw or base64. */

import { endianness } from "node:os";

import { InvalidArgument } from "./errors.js";
import type { Column, Values } from "./types.js";

const LITTLE_ENDIAN = endianness() === "LE";

/** A column as a Float64Array (the array itself when it is one: no copy). */
export function floats(values: Column): Float64Array {
  return values instanceof Float64Array ? values : Float64Array.from(values);
}

function isMatrix(values: Values): values is readonly Column[] {
  return !(values instanceof Float64Array) && values.length > 0 && typeof values[0] !== "number";
}

/** A column or an n x k matrix, flattened row-major, with k (null for a column). */
export function flatten(
  values: Values,
  field: string,
): { flat: Float64Array; width: number | null } {
  if (!isMatrix(values)) {
    return { flat: floats(values as Column), width: null };
  }
  const width = values[0]?.length ?? 0;
  const flat = new Float64Array(values.length * width);
  values.forEach((row, index) => {
    if (row.length !== width) {
      throw new InvalidArgument(
        `expected rows of ${width} values (n x ${width}), but row ${index} has ${row.length}`,
        { field, code: "invalid_argument" },
      );
    }
    flat.set(row, index * width);
  });
  return { flat, width };
}

/** The little-endian float64 bytes of a column (a view of the same memory on little-endian
 * machines). */
export function f64Bytes(values: Float64Array): Uint8Array {
  if (LITTLE_ENDIAN) {
    return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  }
  const bytes = new Uint8Array(values.byteLength);
  const view = new DataView(bytes.buffer);
  values.forEach((value, index) => view.setFloat64(index * 8, value, true));
  return bytes;
}

/** The base64 text of a column's float64 bytes: exact, compact, and NaN-safe in JSON. */
export function f64Base64(values: Float64Array): string {
  const bytes = f64Bytes(values);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}
