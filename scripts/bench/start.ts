// bench start: server start to the first /live that answers, for `npm start` (bun cli/main.ts
// serve) and for the single executable (goal < 150 ms each), next to a bare Bun.serve started the
// same way in the same run.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../engines/process.ts";
import { median, table, type Figure } from "../../lib/bench.ts";
import { setup, spawnServer } from "./common.ts";
import { buildExecutable } from "./memory.ts";

async function bareStart(file: string): Promise<number> {
  const port = freePort();
  const t0 = performance.now();
  const child = Bun.spawn([process.execPath, file, String(port)], { stdout: "ignore", stderr: "inherit" });
  while (!(await fetch(`http://127.0.0.1:${port}/live`).then((r) => r.ok, () => false))) await Bun.sleep(2);
  const ms = performance.now() - t0;
  child.kill();
  await child.exited;
  return ms;
}

export async function benchStart(runs: number): Promise<Figure[]> {
  const w = setup();
  const scratch = mkdtempSync(join(tmpdir(), "lemonade-bench-start-"));
  try {
    const bare = join(scratch, "bare.ts");
    writeFileSync(bare, `Bun.serve({ hostname: "127.0.0.1", port: Number(process.argv[2]), fetch: () => Response.json({ status: "ok" }) });\n`);
    const exe = buildExecutable(scratch);
    const times = { bare: [] as number[], npm: [] as number[], exe: [] as number[] };
    for (let i = 0; i < runs; i++) {
      // Interleaved, so drift in the machine's load hits each alike.
      times.bare.push(await bareStart(bare));
      for (const [side, command] of [["npm", undefined], ["exe", [exe]]] as const) {
        const server = await spawnServer(w, {}, command ? [...command] : undefined);
        times[side].push(server.startMs);
        await server.stop();
      }
    }
    // The goal is absolute; the ratio to a bare Bun.serve started alike shows what the server adds.
    const baseline = { name: "bare Bun.serve", value: median(times.bare) };
    const out: Figure[] = [
      { name: "start to /live p50, npm start's command (bun cli/main.ts serve)", value: median(times.npm), unit: "ms", baseline, goal: { op: "<", target: 150, onValue: true } },
      { name: "start to /live p50, single executable", value: median(times.exe), unit: "ms", baseline, goal: { op: "<", target: 150, onValue: true } },
    ];
    console.log(table(`bench start: ${runs} interleaved starts each`, out));
    return out;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
    w.cleanup();
  }
}
