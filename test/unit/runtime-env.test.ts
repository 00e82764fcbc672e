// The JavaScriptCore settings the server runs with (cli/runtime-env.ts, which bench measures with)
// are the ones it ships with: npm start's script and the .deb's systemd unit set the same, and no
// other; the single executable re-runs itself with those it lacks.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { missingRuntimeEnv, SERVER_RUNTIME_ENV } from "../../cli/runtime-env.ts";

const root = join(import.meta.dir, "..", "..");

test("npm start and the systemd unit set the runtime settings bench measures", () => {
  const fromScript = Object.fromEntries([...pkg.scripts.start.matchAll(/\b(BUN_JSC_\w+)=(\S+)/g)].map((m) => [m[1], m[2]]));
  const unit = readFileSync(join(root, "packaging", "deb", "lemonade-server.service"), "utf8");
  const fromUnit = Object.fromEntries([...unit.matchAll(/^Environment=(BUN_JSC_\w+)=(\S+)$/gm)].map((m) => [m[1], m[2]]));
  expect(Object.keys(SERVER_RUNTIME_ENV).length).toBeGreaterThan(0);
  expect(fromScript).toEqual(SERVER_RUNTIME_ENV);
  expect(fromUnit).toEqual(SERVER_RUNTIME_ENV);
});

test("the settings a process lacks are the ones it has no value for: a user's own value stands", () => {
  const [key, value] = Object.entries(SERVER_RUNTIME_ENV)[0]!;
  expect(missingRuntimeEnv({})).toEqual(SERVER_RUNTIME_ENV);
  expect(missingRuntimeEnv({ [key]: value })).toEqual({});
  expect(missingRuntimeEnv({ [key]: "1" })).toEqual({});
});
