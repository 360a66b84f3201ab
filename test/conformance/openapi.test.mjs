// The OpenAPI document generates a TypeScript client that compiles: the
// document served at GET /openapi.json (kept in internal/httpapi) is what
// openapi-typescript turns into types, and a small client must type-check
// against them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const bin = (name) => path.join(here, "node_modules", ".bin", name);

test("openapi-typescript types compile with a client", () => {
  const doc = path.join(here, "..", "..", "internal", "httpapi", "openapi.json");
  const out = path.join(here, "openapi", "agentchat.d.ts");
  execFileSync(bin("openapi-typescript"), [doc, "-o", out], { stdio: "pipe" });
  try {
    execFileSync(bin("tsc"), ["--noEmit", "--strict", "--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext",
      "--allowImportingTsExtensions", "--lib", "es2022,dom", path.join(here, "openapi", "client.ts")], { stdio: "pipe" });
  } catch (e) {
    assert.fail(`tsc: ${e.stdout}${e.stderr}`);
  }
});
