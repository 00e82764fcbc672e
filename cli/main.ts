#!/usr/bin/env bun
// The `lemonade` command: a client of the server's own HTTP API (plus `serve`, which is the server).
// The JIT policy module comes first, so its scale is set before any other module's top level runs.
import "./jit-policy.ts";
import type { Command } from "./command.ts";
import { runCli } from "./dispatch.ts";
import * as models from "./commands/models.ts";
import * as server from "./commands/server.ts";
import * as chat from "./commands/run.ts";
import { cloud } from "./commands/cloud.ts";
import { chat as chatCommand } from "./commands/chat.ts";
import { launch } from "./commands/launch.ts";
import { cleanupCache } from "./commands/cleanup.ts";
import { serve } from "./commands/serve.ts";
import { tune } from "./commands/tune.ts";
import { worker } from "./commands/worker.ts";

const COMMANDS: Command[] = [
  serve,
  chat.run,
  chatCommand,
  launch,
  models.list,
  models.pull,
  models.del,
  models.load,
  models.unload,
  models.pin,
  models.unpin,
  server.status,
  server.backends,
  server.alias,
  cloud,
  server.config,
  server.telemetry,
  models.exportModel,
  models.importModel,
  models.checkUpdates,
  server.logs,
  chat.bench,
  tune,
  cleanupCache,
  worker,
];

runCli(COMMANDS, process.argv.slice(2));
