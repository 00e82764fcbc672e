// Start-up's JIT policy (cli/jit-policy.ts): held back while the CLI starts, normal once start-up
// is over, and in force before any other module of the CLI runs.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dir, "..", "..");

test("code that runs often during start-up is not optimized; after startupDone it is", () => {
  // A fresh process: the policy is per VM, and this one's must stay normal.
  const code = `
    const { startupDone } = await import(${JSON.stringify(join(root, "cli", "jit-policy.ts"))});
    const { numberOfDFGCompiles, noInline } = require("bun:jsc");
    function sum(n) { let s = 0; for (let i = 0; i < n; i++) s += i; return s; }
    noInline(sum);
    function drive(k) { for (let i = 0; i < k; i++) sum(3); }
    // Under the normal policy 1,000 calls get a function optimized.
    drive(2000);
    const during = numberOfDFGCompiles(sum);
    startupDone();
    drive(2000);
    console.log(JSON.stringify({ during, after: numberOfDFGCompiles(sum) }));`;
  const run = Bun.spawnSync([process.execPath, "-e", code], { cwd: root, env: { ...process.env, BUN_JSC_useFTLJIT: "0" } });
  expect(run.exitCode, run.stderr.toString()).toBe(0);
  const { during, after } = JSON.parse(run.stdout.toString());
  expect(during).toBe(0);
  expect(after).toBeGreaterThan(0);
});

test("cli/main.ts imports the policy before any other module", () => {
  const firstImport = /^import\s[^;]*?from\s+"([^"]+)"|^import\s+"([^"]+)"/m.exec(readFileSync(join(root, "cli", "main.ts"), "utf8"));
  expect(firstImport?.[1] ?? firstImport?.[2]).toBe("./jit-policy.ts");
});
