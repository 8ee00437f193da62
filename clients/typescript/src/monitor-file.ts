/**
 * The monitor state file, as the Python client keeps it: one JSON document, replaced whole and
 * atomically (temp file in the same folder, fsync, rename), changed under the lock file
 * `<path>.lock` (created exclusively: `wx`). A reader takes no lock: it sees the old document
 * or the new one. A lock older than `STALE_MS` is a crashed writer's and is broken; a writer
 * waits at most `timeoutMs` for the lock.
 */

import { randomBytes } from "node:crypto";
import { open, readFile, rename, stat, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

export const FORMAT = "evalserve-monitor-states";
export const VERSION = 1;
export const STALE_MS = 20_000;

export interface StateDocument {
  format: string;
  version: number;
  monitors: unknown[];
  retired: unknown[];
}

export function emptyDocument(): StateDocument {
  return { format: FORMAT, version: VERSION, monitors: [], retired: [] };
}

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException).code === "ENOENT";
}

/** The document at `path` (empty when there is no file yet); refuses any other file. */
export async function readDocument(path: string): Promise<StateDocument> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if (isMissing(error)) {
      return emptyDocument();
    }
    throw error;
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    throw new Error(`${path}: not a monitor state file (${String(error)})`);
  }
  const found = document as Partial<StateDocument> | null;
  if (found === null || typeof found !== "object" || found.format !== FORMAT) {
    throw new Error(`${path}: not a monitor state file (no format "${FORMAT}")`);
  }
  if (found.version !== VERSION) {
    throw new Error(
      `${path}: monitor state file version ${String(found.version)}; this client reads ${VERSION}`,
    );
  }
  return { ...emptyDocument(), ...found } as StateDocument;
}

/** Replace `path` by `document` atomically. */
export async function writeDocument(path: string, document: StateDocument): Promise<void> {
  const temp = join(
    dirname(path),
    `.${basename(path)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`,
  );
  try {
    const file = await open(temp, "w");
    try {
      await file.writeFile(`${JSON.stringify(document, null, 1)}\n`, "utf8");
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(temp, path);
  } finally {
    await unlink(temp).catch(() => undefined);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Run `body` holding `<path>.lock`. */
export async function withLock<T>(
  path: string,
  timeoutMs: number,
  body: () => Promise<T>,
): Promise<T> {
  const lock = `${path}.lock`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const handle = await open(lock, "wx");
      await handle.writeFile(`${process.pid}\n`);
      await handle.close();
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") {
        throw error;
      }
      await breakIfStale(lock);
      if (Date.now() > deadline) {
        throw new Error(`${lock}: held by another writer for over ${timeoutMs} ms`);
      }
      await sleep(5);
    }
  }
  try {
    return await body();
  } finally {
    await unlink(lock).catch(() => undefined);
  }
}

async function breakIfStale(lock: string): Promise<void> {
  try {
    const { mtimeMs } = await stat(lock);
    if (Date.now() - mtimeMs > STALE_MS) {
      await unlink(lock);
    }
  } catch (error) {
    if (!isMissing(error)) {
      throw error;
    }
  }
}
