// bench start: server start to the first /live that answers, for `npm start` (cli/start.js on its
// bundle), the sources it ran before and the single executable (goal < 150 ms each), next to a bare
// Bun.serve started the same way in the same run; and what npm start's check of its bundle costs.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../engines/process.ts";
import { median, table, type Figure } from "../../lib/bench.ts";
import { setup, spawnServer } from "./common.ts";
import { checkBundle } from "../../cli/start.js";
import type { StartManifest } from "../build.ts";
import { servers } from "./memory.ts";

const root = join(import.meta.dir, "..", "..");

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

/** npm start's own cost before the server's code runs: cli/start.js's check that the bundle is
 * current (one manifest read and a stat per input), timed in this process. */
function checkMs(startDir: string): number {
  const times: number[] = [];
  for (let i = 0; i < 50; i++) {
    const t0 = performance.now();
    if (checkBundle(startDir, root, Bun.revision).stale) throw new Error("the bundle just built is stale");
    times.push(performance.now() - t0);
  }
  return median(times);
}

export async function benchStart(runs: number): Promise<Figure[]> {
  const w = setup();
  const scratch = mkdtempSync(join(tmpdir(), "lemonade-bench-start-"));
  try {
    const bare = join(scratch, "bare.ts");
    writeFileSync(bare, `Bun.serve({ hostname: "127.0.0.1", port: Number(process.argv[2]), fetch: () => Response.json({ status: "ok" }) });\n`);
    const sides = servers(scratch);
    const times = new Map<string, number[]>(sides.map((side) => [side.label, []]));
    const bareTimes: number[] = [];
    for (let i = 0; i < runs; i++) {
      // Interleaved, so drift in the machine's load hits each alike.
      bareTimes.push(await bareStart(bare));
      for (const side of sides) {
        const server = await spawnServer(w, side.env, side.command);
        times.get(side.label)!.push(server.startMs);
        await server.stop();
      }
    }
    // The goal is absolute; the ratio to a bare Bun.serve started alike shows what the server adds.
    const baseline = { name: "bare Bun.serve", value: median(bareTimes) };
    const out: Figure[] = sides.map((side) => ({ name: `start to /live p50, ${side.label}`, value: median(times.get(side.label)!), unit: "ms", baseline, goal: { op: "<", target: 150, onValue: true } }));
    const manifest = JSON.parse(readFileSync(join(scratch, "start", "manifest.json"), "utf8")) as StartManifest;
    out.push({ name: `npm start's check that its bundle is current (manifest + ${manifest.inputs.length} stats)`, value: checkMs(join(scratch, "start")), unit: "ms" });
    console.log(table(`bench start: ${runs} interleaved starts each`, out));
    return out;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
    w.cleanup();
  }
}
