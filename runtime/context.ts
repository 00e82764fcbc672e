// Everything a running server holds, as the protocol adapters and HTTP routes use it. The
// composition root (app/context.ts) builds it once from the configuration.
import type { Config } from "../config/config.ts";
import type { Capability } from "../spec/recipes.ts";
import type { Logger } from "../observability/logger.ts";
import type { Metrics } from "../observability/metrics.ts";
import type { GenerationStats } from "../observability/stats.ts";
import type { HostStats } from "../observability/system.ts";
import type { Telemetry } from "../observability/telemetry.ts";
import type { SpanBus } from "../observability/span-bus.ts";
import type { AliasStore } from "../models/aliases.ts";
import type { Catalog, CatalogModel } from "../models/catalog.ts";
import type { CloudProviders } from "../models/cloud.ts";
import type { DownloadManager } from "../models/downloads.ts";
import type { ModelLibrary } from "../models/library.ts";
import type { OptionResolver, RecipeOptionsStore } from "../models/recipe-options.ts";
import type { AutoTune } from "../models/tuning.ts";
import type { InProcessRecipe, OneShotInput, OneShotRecipe } from "../engines/engine.ts";
import type { Backends } from "./backends.ts";
import type { JobEngine } from "./jobs.ts";
import type { EngineProxy } from "./proxy.ts";
import type { Scheduler } from "./scheduler.ts";
import type { KvCache } from "./kv-cache.ts";

/** The registered recipes of the in-process and one-shot kinds, as protocols reach them. */
export interface StandIns {
  /** The recipe that stands in for the model's engine for `capability` (espeak-ng speaking for
   * a kokoro model, sd-cli upscaling for sd-cpp), whether or not it serves now; null when none. */
  of(model: CatalogModel, capability: Capability): InProcessRecipe | OneShotRecipe | null;
  /** Whether it serves now: the model's own engine lacks the capability, is not installed, or the
   * model's files are not downloaded (Kokoros speaks once it is installed and they are). */
  serving(model: CatalogModel, capability: Capability): boolean;
  /** Runs a one-shot recipe on this machine's engines. */
  run(recipe: OneShotRecipe, job: OneShotInput, signal?: AbortSignal): Promise<Uint8Array>;
}

import type { RpcWorkers } from "./rpc-workers.ts";

export interface ServerContext {
  config: Config;
  version: string;
  logger: Logger;
  metrics: Metrics;
  stats: GenerationStats;
  hostStats: HostStats;
  /** OpenTelemetry tracing of inference requests (the `telemetry.*` settings). */
  telemetry: Telemetry;
  aliases: AliasStore;
  catalog: Catalog;
  cloud: CloudProviders;
  recipeOptions: RecipeOptionsStore;
  options: OptionResolver<CatalogModel>;
  /** Auto-tune: the archetype, the profiles in use, the local overlays. */
  tuning: AutoTune;
  library: ModelLibrary;
  downloads: DownloadManager;
  backends: Backends;
  scheduler: Scheduler<CatalogModel>;
  proxy: EngineProxy;
  /** Client-posted step lists run in the background (/v1/jobs). */
  jobs: JobEngine;
  /** Finished spans, published by the tracer; the /spans/stream channel listens. */
  spans: SpanBus;
  /** The KV cache of evicted engines' recent conversations, restored on their next load. */
  kvCache: KvCache;
  /** The RPC workers (`llamacpp.rpc_workers`) and their last health checks. */
  rpcWorkers: RpcWorkers;
  standIns: StandIns;
  /** The port the WebSocket APIs answer on, once listening. */
  websocketPort: number | null;
  /** What the server around this context does when asked (app/server.ts sets them). */
  lifecycle: { rebind(host: string, port: number): void; shutdown(): void };
  /** One of the web app's files by name (`app.js`, `app.css`), bundled on first use or embedded; undefined for a name it has not. */
  webAsset(file: string): Promise<string | Blob | undefined>;
  /** Requests received since start (the idle collector watches it). */
  activity: { requests: number };
}
