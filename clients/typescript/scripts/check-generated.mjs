// Regenerates the protobuf code into a temporary folder (the same buf.gen.yaml, the same pinned
// protoc-gen-es) and fails on any difference from the committed src/gen: the drift check of
// `npm run check:generated`, `make ts-check` and tests/clients/test_typescript.py.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const committed = join(here, "src", "gen");

function files(root) {
  const found = new Map();
  const walk = (folder) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) walk(path);
      else found.set(relative(root, path), readFileSync(path));
    }
  };
  walk(root);
  return found;
}

const out = mkdtempSync(join(tmpdir(), "evalserve-gen-"));
try {
  execFileSync(join(here, "node_modules", ".bin", "buf"),
    ["generate", "--template", "buf.gen.yaml", "-o", out], { cwd: here, stdio: "inherit" });
  const fresh = files(join(out, "src", "gen"));
  const current = files(committed);
  const differs = (name) =>
    !fresh.has(name) || !current.has(name) || !fresh.get(name).equals(current.get(name));
  const stale = [...new Set([...fresh.keys(), ...current.keys()])].filter(differs).sort();
  if (stale.length > 0) {
    console.error(`clients/typescript/src/gen is stale: ${stale.join(", ")}.`);
    console.error("Run `npm run generate` in clients/typescript and commit the result.");
    process.exit(1);
  }
  console.log(`src/gen is up to date (${fresh.size} file(s)).`);
} finally {
  rmSync(out, { recursive: true, force: true });
}
