// Everything a running server holds, built once from its configuration and handed to the routes.
import type { Config } from "./config.ts";
import { Logger } from "./logger.ts";
import { Metrics } from "./metrics.ts";
import { HostStats } from "./system.ts";
import { VERSION } from "./version.ts";
import { AliasStore } from "../models/aliases.ts";

export interface ServerContext {
  config: Config;
  logger: Logger;
  metrics: Metrics;
  aliases: AliasStore;
  hostStats: HostStats;
  version: string;
  /** The port the WebSocket APIs answer on, once listening. */
  websocketPort: number | null;
}

export function createServerContext(config: Config, logger = new Logger(config.logLevel)): ServerContext {
  return {
    config,
    logger,
    metrics: new Metrics(VERSION),
    aliases: new AliasStore(config.cacheDir),
    hostStats: new HostStats(),
    version: VERSION,
    websocketPort: null,
  };
}
