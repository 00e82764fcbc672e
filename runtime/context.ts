// Everything a running server holds, as the protocol adapters and HTTP routes use it. The
// composition root (app/context.ts) builds it once from the configuration.
import type { Config } from "../config/config.ts";
import type { SpeechFormat } from "../spec/openai.ts";
import type { Logger } from "../observability/logger.ts";
import type { Metrics } from "../observability/metrics.ts";
import type { GenerationStats } from "../observability/stats.ts";
import type { HostStats } from "../observability/system.ts";
import type { AliasStore } from "../models/aliases.ts";
import type { Catalog, CatalogModel } from "../models/catalog.ts";
import type { CloudProviders } from "../models/cloud.ts";
import type { DownloadManager } from "../models/downloads.ts";
import type { ModelLibrary } from "../models/library.ts";
import type { OptionResolver, RecipeOptionsStore } from "../models/recipe-options.ts";
import type { Upscaler } from "../engines/sd-cpp.ts";
import type { Backends } from "./backends.ts";
import type { EngineProxy } from "./proxy.ts";
import type { Scheduler } from "./scheduler.ts";

/** Text-to-speech that runs in the server process (engines/kokoro.ts's espeak-ng). */
export interface Speech {
  /** The engine's name, sent as the X-Lemonade-Speech-Engine header of each answer. */
  engine: string;
  knows(voice: string): boolean;
  /** The encoded audio as it is produced; throws when the engine cannot run here. */
  synthesize(text: string, voice: string, speed: number, format: SpeechFormat): ReadableStream<Uint8Array>;
}

export interface ServerContext {
  config: Config;
  version: string;
  logger: Logger;
  metrics: Metrics;
  stats: GenerationStats;
  hostStats: HostStats;
  aliases: AliasStore;
  catalog: Catalog;
  cloud: CloudProviders;
  recipeOptions: RecipeOptionsStore;
  options: OptionResolver<CatalogModel>;
  library: ModelLibrary;
  downloads: DownloadManager;
  backends: Backends;
  scheduler: Scheduler<CatalogModel>;
  proxy: EngineProxy;
  speech: Speech;
  /** Whether a text-to-speech model speaks on its neural engine (Kokoros installed, the model's
   * files downloaded) rather than the embedded espeak-ng. */
  neuralSpeech(model: CatalogModel): boolean;
  /** ESRGAN upscaling (engines/sd-cpp.ts's sd-cli). */
  upscaler: Upscaler;
  /** The port the WebSocket APIs answer on, once listening. */
  websocketPort: number | null;
  /** What the server around this context does when asked (app/server.ts sets them). */
  lifecycle: { rebind(host: string, port: number): void; shutdown(): void };
  /** The web app's files by name (`app.js`, `app.css`), bundled on first use or embedded. */
  webAssets(): Promise<Record<string, string>>;
  /** Requests received since start (the idle collector watches it). */
  activity: { requests: number };
}
