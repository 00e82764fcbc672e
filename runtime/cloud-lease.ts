// A claim on a cloud model, shaped like a scheduler lease so that the one proxy forwards to a
// provider exactly as to a local engine. Nothing is started, so a cloud model never counts
// against max_loaded_models (/v1/health lists it in the `unmetered` pool) and has nothing to stop
// when it fails; a pool's member that fails is marked down (runtime/pool.ts).
import type { Clock } from "../lib/clock.ts";
import type { CatalogModel } from "../models/catalog.ts";
import type { RunningEngine } from "../engines/engine.ts";
import type { Lease, Instance } from "./scheduler.ts";
import type { MemberClaim } from "./pool.ts";

/** Requests one cloud model serves at once before the rest wait in the server's queue. */
const CLOUD_SLOTS = 64;

const NEVER = new Promise<number>(() => {});

/** A stand-in for an engine that is always there: a lone provider's health is its business; a
 * pool's member answers its probe, so that one that hangs is found out and left for the next. */
function remoteEngine(baseUrl: string, health: () => Promise<boolean>): RunningEngine {
  return {
    url: baseUrl,
    pid: 0,
    argv: [],
    slots: CLOUD_SLOTS,
    exited: NEVER,
    isStopping: false,
    lastLines: "",
    health,
    stop: async () => {},
  };
}

/** One instance per cloud model (per member, for a pool), so that its queue and counters persist
 * across requests and a silent member's hang check is its own. */
export class CloudLeases {
  private readonly instances = new Map<string, Instance<CatalogModel>>();

  constructor(private readonly clock: Clock) {}

  /** The instances a cloud model has (one per pool member it was sent to). */
  of(id: string): Instance<CatalogModel>[] {
    return [...this.instances.values()].filter((i) => i.model.id === id);
  }

  /** A claim on the model at its provider's base URL, or at the member a pool chose. */
  lease(model: CatalogModel, baseUrl: string, member?: MemberClaim): Lease<CatalogModel> {
    const url = member?.url ?? baseUrl;
    const key = member ? `${model.id} ${url}` : model.id;
    let instance = this.instances.get(key);
    if (!instance || instance.engine.url !== url) {
      instance = {
        model,
        engine: remoteEngine(url, member?.health ?? (async () => true)),
        spec: { options: {}, ctxSize: model.cloud?.contextLength ?? 0 },
        pinned: false,
        lastUse: this.clock.now(),
        inflight: 0,
        streaming: 0,
        lastOutput: this.clock.now(),
        loadMs: 0,
        state: "ready",
        residency: "standard",
        tier: "full",
        autoEvicting: false,
        downsizeFailed: false,
        gone: Promise.withResolvers<void>(),
      };
      this.instances.set(key, instance);
    }
    const s = instance;
    s.inflight++;
    let released = false;
    const lease: Lease<CatalogModel> = {
      instance: s,
      url,
      streaming: () => {},
      release: () => {
        if (released) return;
        released = true;
        s.inflight--;
        s.lastUse = this.clock.now();
        member?.done();
      },
      fail: async (why) => {
        member?.failed(why ?? "failed");
        lease.release();
      },
    };
    return lease;
  }
}
