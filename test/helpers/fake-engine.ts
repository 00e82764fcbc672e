// The FAKE llama-server (scripts/fake-engine/llama-server): a Scheduler whose engines are fake
// processes (the integration tier's scheduler tests), and a server whose llama.cpp models run on it.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { RunningEngine } from "../../engines/engine.ts";
import { systemClock } from "../../lib/clock.ts";
import { startEngine } from "../../engines/process.ts";
import type { LoadSpec } from "../../models/recipe-options.ts";
import { Scheduler, type SchedulableModel, type SchedulerDeps, type SchedulerEffects } from "../../runtime/scheduler.ts";
import { startTestServer, tempDir, type TestServer } from "./server.ts";
import { FAKE_ENGINE_DIR } from "../../scripts/fake-engine/path.ts";

export const FAKE_DIR = FAKE_ENGINE_DIR;
export const FAKE_LLAMA_SERVER = join(FAKE_DIR, "llama-server");

export interface FakeModel extends SchedulableModel {
  /** Extra fake flags (`--fake-start-ms 300`, `--fake-health-fail`). */
  flags?: string[];
}

/** Starts a fake engine for a model, as the launcher would start a real one. */
export function launchFake(model: FakeModel, readyTimeoutMs = 5000): Promise<RunningEngine> {
  return startEngine(
    {
      argv: (port) => [process.execPath, FAKE_LLAMA_SERVER, "-m", model.id, "--port", String(port), ...(model.flags ?? [])],
      healthPath: "/health",
      slots: 4,
      readyTimeoutMs,
    },
    () => {},
  );
}

const SPEC: LoadSpec = { options: { evict_idle_timeout: 0 }, ctxSize: 4096 };

/** A scheduler over fake engine processes on the system clock; `overrides` replace any of its
 * dependencies, `effects` any of its effects. */
export function fakeScheduler(
  max = 1,
  overrides: Partial<SchedulerDeps<FakeModel>> = {},
  effects: Partial<SchedulerEffects<FakeModel>> = {},
): Scheduler<FakeModel> {
  return new Scheduler<FakeModel>({
    effects: { prepare: async () => {}, start: (model) => launchFake(model), clock: systemClock, ...effects },
    check: () => {},
    resolve: () => SPEC,
    maxLoaded: () => max,
    log: { info() {}, warn() {}, error() {} },
    ...overrides,
  });
}

/** A server whose llama.cpp models (`extra.<name>` for each name) run on the fake engine: the
 * fake comes first on the server's PATH and every model's saved backend is `system`. `writeModel`
 * writes a name's file in place of the fake's placeholder (a GGUF header naming `bert` makes an
 * embedding model). */
export async function startFakeServer(
  names: string[],
  env: Record<string, string> = {},
  options: Record<string, unknown> = {},
  writeModel: Record<string, (path: string) => void> = {},
): Promise<TestServer> {
  const cacheDir = tempDir();
  const extra = tempDir("lemonade-fake-models-");
  mkdirSync(cacheDir, { recursive: true });
  const saved: Record<string, unknown> = {};
  for (const name of names) {
    const path = join(extra, `${name}.gguf`);
    if (writeModel[name]) writeModel[name](path);
    else writeFileSync(path, "FAKE: the fake engine reads no weights");
    saved[`extra.${name}`] = { llamacpp_backend: "system", ...options };
  }
  writeFileSync(join(cacheDir, "recipe_options.json"), JSON.stringify(saved));
  return startTestServer(
    { PATH: `${FAKE_DIR}:${process.env.PATH ?? ""}`, LEMONADE_EXTRA_MODELS_DIR: extra, ...env },
    cacheDir,
    { engines: false },
  );
}
