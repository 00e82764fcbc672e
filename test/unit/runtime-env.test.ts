// The JavaScriptCore settings the server is measured with (bench's SERVER_RUNTIME_ENV) are the ones
// it ships with: npm start's script and the .deb's systemd unit set the same, and no other.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { SERVER_RUNTIME_ENV } from "../../scripts/bench/common.ts";

const root = join(import.meta.dir, "..", "..");

test("npm start and the systemd unit set the runtime settings bench measures", () => {
  const fromScript = Object.fromEntries([...pkg.scripts.start.matchAll(/\b(BUN_JSC_\w+)=(\S+)/g)].map((m) => [m[1], m[2]]));
  const unit = readFileSync(join(root, "packaging", "deb", "lemonade-server.service"), "utf8");
  const fromUnit = Object.fromEntries([...unit.matchAll(/^Environment=(BUN_JSC_\w+)=(\S+)$/gm)].map((m) => [m[1], m[2]]));
  expect(Object.keys(SERVER_RUNTIME_ENV).length).toBeGreaterThan(0);
  expect(fromScript).toEqual(SERVER_RUNTIME_ENV);
  expect(fromUnit).toEqual(SERVER_RUNTIME_ENV);
});
