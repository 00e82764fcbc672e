// Live configuration (POST /internal/set, /v1/params, /internal/pin, /internal/shutdown): settings
// checked against Lemonade's defaults, saved in config.json, and applied at once where the server can.
import { resolve } from "node:path";
import { RECIPE_DEFAULT_KEYS } from "../spec/recipes.ts";
import { changesOf, effectiveSettings, saveSettings, SettingsConflict, settingProblem } from "../config/settings.ts";
import { ApiError } from "../lib/api-error.ts";
import { isJson } from "../lib/json.ts";
import { clip } from "../lib/scrub.ts";
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
  return { status: "success", updated: nested(changes), applied: keys.filter(isLive), saved: keys.filter((k) => !isLive(k)) };
}

/** Dotted keys as the objects config.json nests them: `{"llamacpp.args": x}` -> `{"llamacpp": {"args": x}}`. */
function nested(changes: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(changes)) {
    const parts = key.split(".");
    let at = out;
    for (const part of parts.slice(0, -1)) at = (at[part] ??= {}) as Record<string, unknown>;
    at[parts.at(-1)!] = value;
  }
  return out;
}

/** POST /internal/pin, its body read as Lemonade reads it: `model` (else `model_name`) and a
 * boolean `pinned`, each refused in Lemonade's words when missing. */
export function pin(ctx: Pick<ServerContext, "catalog" | "scheduler">, text: string): PinResponse {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    throw ApiError.of(E.invalidJson, `Invalid JSON body: ${(err as Error).message}`);
  }
  const fields = isJson(body) ? body : {};
  const name = fields.model ?? fields.model_name;
  if (name === undefined) throw ApiError.of(E.missingArgument, "Parameter 'model' or 'model_name' is required", "model");
  if (typeof name !== "string") throw ApiError.of(E.invalidArgument, "Parameter 'model' must be a string", "model");
  if (typeof fields.pinned !== "boolean") throw ApiError.of(E.missingArgument, "Parameter 'pinned' is required and must be a boolean", "pinned");
  const model = ctx.catalog.find(name);
  if (!model || !ctx.scheduler.setPinned(model.id, fields.pinned)) throw ApiError.of(E.pinNotLoaded, `Model not loaded: ${clip(model?.id ?? name)}`, "model_name");
  return { status: "success", model_name: name, pinned: fields.pinned };
}

/** POST /internal/shutdown: every engine stopped before the answer, as Lemonade does, so a caller
 * that goes on finds none left; then the server stops. */
export async function shutdown(ctx: Pick<ServerContext, "lifecycle" | "scheduler">): Promise<ShutdownResponse> {
  await ctx.scheduler.unloadWhere();
  setTimeout(() => ctx.lifecycle.shutdown(), 50);
  return { status: "shutting down" };
}
