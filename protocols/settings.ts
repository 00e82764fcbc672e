// Live configuration (POST /internal/set, /v1/params, /internal/pin, /internal/shutdown): settings
// checked against Lemonade's defaults, saved in config.json, and applied at once where the server can.
import { resolve } from "node:path";
import { RECIPE_DEFAULT_KEYS } from "../spec/recipes.ts";
import { changesOf, effectiveSettings, saveSettings, SettingsConflict, settingProblem } from "../config/settings.ts";
import { ApiError } from "../lib/api-error.ts";
import { isJson } from "../lib/json.ts";
import { parseLogLevel } from "../lib/log-level.ts";
import { telemetrySettings } from "../observability/telemetry.ts";
import { E } from "../spec/errors.ts";
import type { PinResponse, SettingsRequest, SettingsResponse, ShutdownResponse } from "../spec/internal.ts";
import type { ServerContext } from "../runtime/context.ts";

/** Settings this server applies while it runs (and every `telemetry.*` one); the rest take effect
 * at the next start. */
const LIVE = new Set(["max_loaded_models", "log_level", "ctx_size", "offline", "extra_models_dir", "host", "port", "auto_evict", "auto_evict_threshold_pct", ...Object.keys(RECIPE_DEFAULT_KEYS)]);
const isLive = (key: string) => LIVE.has(key) || key.startsWith("telemetry.");

type SettingsContext = Pick<ServerContext, "catalog" | "config" | "lifecycle" | "logger" | "telemetry">;

/** GET and POST /v1/params: the body, read as JSON whatever the method, set as /internal/set does. */
export function setParams(ctx: SettingsContext, text: string): SettingsResponse {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw ApiError.of(E.invalidJson, "Invalid JSON in request body");
  }
  if (!isJson(body)) throw ApiError.of(E.invalidJson, "The body must be a JSON object of settings");
  return setSettings(ctx, body);
}

export function setSettings(ctx: SettingsContext, body: SettingsRequest): SettingsResponse {
  let changes: Record<string, unknown>;
  try {
    changes = changesOf(body);
  } catch (err) {
    if (err instanceof SettingsConflict) throw ApiError.of(E.invalidArgument, err.message, err.key);
    throw err;
  }
  const keys = Object.keys(changes);
  if (!keys.length) throw ApiError.of(E.missingArgument, "Send at least one setting, such as {\"max_loaded_models\": 2}");
  for (const key of keys) {
    const problem = settingProblem(key, changes[key]);
    if (problem) throw ApiError.of(E.invalidArgument, problem, key);
  }
  saveSettings(ctx.config, changes);
  const { config } = ctx;
  for (const [key, value] of Object.entries(changes)) {
    switch (key) {
      case "max_loaded_models":
        config.maxLoadedModels = value as number;
        break;
      case "log_level":
        config.logLevel = parseLogLevel(String(value));
        ctx.logger.setLevel(config.logLevel);
        break;
      case "ctx_size":
        config.ctxSize = value as number;
        break;
      case "offline":
        config.offline = value as boolean;
        break;
      case "auto_evict":
        // The server-wide answer for models whose own auto_evict is unset.
        config.recipeDefaults.auto_evict = value as boolean;
        break;
      case "auto_evict_threshold_pct":
        config.autoEvictThresholdPct = value as number;
        break;
      default:
        // Server-wide recipe options (`llamacpp.args`, `sdcpp.steps`, ...): the next load uses them.
        if (key in RECIPE_DEFAULT_KEYS) {
          const option = RECIPE_DEFAULT_KEYS[key]!;
          if (value === "") delete config.recipeDefaults[option];
          else config.recipeDefaults[option] = value as string | number | boolean;
        }
        break;
      case "extra_models_dir":
        config.extraModelsDir = value ? resolve(String(value)) : null;
        ctx.catalog.setExtraModelsDir(config.extraModelsDir);
        break;
    }
  }
  if ("host" in changes || "port" in changes) {
    const host = String(changes.host ?? config.host);
    const port = Number(changes.port ?? config.port);
    // After this answer has gone out: the listener it travels on is the one replaced.
    setTimeout(() => ctx.lifecycle.rebind(host, port), 50);
  }
  if (keys.some((k) => k.startsWith("telemetry."))) ctx.telemetry.configure(telemetrySettings(effectiveSettings(config).telemetry));
  ctx.logger.info("Server", `Settings changed: ${keys.join(", ")}`);
  return { status: "success", applied: keys.filter(isLive), saved: keys.filter((k) => !isLive(k)) };
}

export function pin(ctx: Pick<ServerContext, "catalog" | "scheduler">, name: string, pinned: boolean): PinResponse {
  const model = ctx.catalog.find(name);
  if (!model || !ctx.scheduler.setPinned(model.id, pinned)) throw ApiError.of(E.pinNotLoaded, `Model not loaded: ${name}`, "model_name");
  return { status: "success", model_name: model.id, pinned };
}

export function shutdown(ctx: Pick<ServerContext, "lifecycle">): ShutdownResponse {
  setTimeout(() => ctx.lifecycle.shutdown(), 50);
  return { status: "success", message: "The server is shutting down" };
}
