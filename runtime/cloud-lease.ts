// A claim on a cloud model, shaped like a scheduler lease so that the one proxy forwards to a
// provider exactly as to a local engine. Nothing is loaded, so a cloud model never counts
// against max_loaded_models, never appears in /v1/health, and has nothing to stop when it fails.
import type { CatalogModel } from "../models/catalog.ts";
import type { RunningEngine } from "../engines/engine.ts";
import type { Lease, Instance } from "./scheduler.ts";

/** Requests one cloud model serves at once before the rest wait in the server's queue. */
const CLOUD_SLOTS = 64;

const NEVER = new Promise<number>(() => {});

/** A stand-in for an engine that is always there: the provider's own health is its business. */
function remoteEngine(baseUrl: string): RunningEngine {
  return {
    url: baseUrl,
    pid: 0,
    argv: [],
    slots: CLOUD_SLOTS,
    exited: NEVER,
    isStopping: false,
    lastLines: "",
    health: async () => true,
    stop: async () => {},
  };
}

/** One instance per cloud model, so that its queue and counters persist across requests. */
export class CloudLeases {
  private readonly instances = new Map<string, Instance<CatalogModel>>();

  lease(model: CatalogModel, baseUrl: string): Lease<CatalogModel> {
    let instance = this.instances.get(model.id);
    if (!instance || instance.engine.url !== baseUrl) {
      instance = {
        model,
        engine: remoteEngine(baseUrl),
        spec: { options: {}, ctxSize: model.cloud?.contextLength ?? 0 },
        pinned: false,
        lastUse: Date.now(),
        inflight: 0,
        streaming: 0,
        lastOutput: Date.now(),
        loadMs: 0,
        state: "ready",
        residency: "standard",
        tier: "full",
        autoEvicting: false,
        downsizeFailed: false,
        gone: Promise.withResolvers<void>(),
      };
      this.instances.set(model.id, instance);
    }
    const s = instance;
    s.inflight++;
    let released = false;
    const lease: Lease<CatalogModel> = {
      instance: s,
      url: baseUrl,
      streaming: () => {},
      release: () => {
        if (released) return;
        released = true;
        s.inflight--;
        s.lastUse = Date.now();
      },
      fail: async () => lease.release(),
    };
    return lease;
  }
}
