// The contract every recipe (engine family) implements, one file per recipe in engines/. The
// scheduler never names a recipe: the launcher (runtime/launcher.ts) looks the model's recipe up
// in the registered list (engines/recipes.ts) and drives it through this interface alone.
// Engines know nothing of HTTP or of the catalog: a model reaches them as a LaunchInput.
import { accessSync, constants } from "node:fs";
import type { Capability, ModelType, Options } from "../spec/recipes.ts";
import type { Json } from "../lib/json.ts";
import type { SpeechFormat } from "../spec/openai.ts";
import type { Devices } from "../lib/devices.ts";

/** A request an engine cannot be configured for (bad backend, reserved flag, cannot run here). */
export class EngineConfigError extends Error {}

/** The backend can be installed here but is not yet; the launcher installs it and tries again. */
export class NotInstalledError extends EngineConfigError {}

export class EngineStartError extends Error {}

export type BackendState = "unsupported" | "installable" | "update_required" | "installed";

export interface BackendStatus {
  devices: string[];
  state: BackendState;
  message: string;
  action: string;
  version?: string;
  /** The release page of the pinned prebuilt build, for a backend installed from (or offered as) a release. */
  release_url?: string;
}

export interface RecipeStatus {
  default_backend?: string;
  backends: Record<string, BackendStatus>;
}

/** An engine built from the source an npm package ships, cached per version in
 * `<cache>/bin/<recipe>/<version>/`. */
export interface SourceBuiltEngine {
  recipe: string;
  binary: string;
  /** Identifies the source the binary is built from; a cached build of another version is stale. */
  version: string;
  description: string;
  /** Other binaries the build installs beside the main one, and what each is for. */
  extras?: { binary: string; use: string }[];
}

export type BuildRunner = (argv: string[], cwd: string, onLine?: (line: string) => void) => Promise<void>;

/** How to build a backend from source (engines/source-build.ts runs it). */
export interface BuildRecipe {
  engine: SourceBuiltEngine;
  /** The npm package (name@version) whose tarball carries the source. */
  npmPackage: string;
  /** Lays the source tree out in `dest` from the unpacked package at `pkg`. */
  extract(pkg: string, dest: string, run: BuildRunner): Promise<void>;
  cmakeFlags: string[];
  /** The cmake targets built; every binary they leave in `build/bin` is installed. */
  targets: string[];
}

/** Where engines live on this machine. */
export interface EngineEnv {
  cacheDir: string;
  /** The server's PATH, where the `system` backends look for their binaries. */
  path: string;
  /** The RPC workers models may be split across. */
  rpc?: RpcSettings;
  /** Binaries the user pointed a backend at (config.json `llamacpp.vulkan_bin`, `sdcpp.cpu_bin`,
   * ...), by config section, then backend. */
  binaries?: Record<string, Record<string, string>>;
  /** The machine's devices (lib/devices.ts), probed once; tests pass recorded ones. */
  devices?: Devices;
}

/** The user's own binary for a backend, when config.json names one; refused when it is not there. */
export function configuredBinary(env: EngineEnv, section: string, backend: string): string | null {
  const path = env.binaries?.[section]?.[backend];
  if (!path) return null;
  try {
    accessSync(path, constants.X_OK);
  } catch {
    throw new EngineConfigError(`${section}.${backend}_bin points at ${path}, which is not an executable file`);
  }
  return path;
}

/** A backend's state when config.json points it at the user's own binary. */
export function configuredBinaryStatus(path: string): BackendStatus {
  return { devices: ["cpu"], state: "installed", message: "", action: "", version: `configured (${path})` };
}

/** A model as an engine sees it: files on disk and the options it resolved to. */
export interface LaunchInput {
  modelId: string;
  type: ModelType;
  /** Role (`main`, `mmproj`, ...) -> absolute path. */
  files: Record<string, string>;
  /** The resolved recipe options. */
  options: Options;
  ctxSize: number;
  /** A folder of the model's own for files the engine writes (llama.cpp's slot saves). */
  workDir: string;
  /** Auto-tune's flags (spec/recipes.ts `tuning`), set by the server, before the model's own args. */
  tuningArgs?: string[];
  /** The RPC workers this server may split a model across (config `llamacpp.rpc_workers`). */
  rpc?: RpcSettings;
}

/** config.json `llamacpp.rpc_workers` and the secret they share (`LEMONADE_RPC_SECRET` or
 * `llamacpp.rpc_secret`). */
export interface RpcSettings {
  workers: string[];
  secret: string | null;
  /** How long a worker has to complete its handshake (LEMONADE_RPC_TIMEOUT_MS, default 3000). */
  timeoutMs: number;
}

/** What an engine needs opened before it starts and closed when it ends (llama.cpp's RPC
 * tunnels): its flags, appended to the command line, and what `/v1/health` shows of it. */
export interface Attachment {
  args: string[];
  /** Called once the engine is ready. */
  ready?(): void;
  detail(): Json;
  close(): void;
}

/** How to start an engine: nothing runs until the launcher spawns it. */
export interface LaunchPlan {
  /** The command line, for the free loopback port the engine is to listen on. */
  argv(port: number): string[];
  env?: Record<string, string>;
  /** Answers 200 once the engine can serve. */
  healthPath: string;
  readyTimeoutMs: number;
  /** Requests the engine serves at once (its parallel slots); more wait in the server's queue. */
  slots: number;
  /** The backend it runs on, `auto` resolved (set by the launcher). */
  backend?: string;
  /** Opens what the engine needs first (a failure fails the load, and nothing is left running). */
  attach?(): Promise<Attachment>;
}

/** A started engine, as the scheduler and proxy use it. */
export interface RunningEngine {
  /** Base URL of the engine's HTTP server, e.g. `http://127.0.0.1:40123`. */
  readonly url: string;
  readonly pid: number;
  readonly argv: string[];
  /** Requests it serves at once (LaunchPlan.slots). */
  readonly slots: number;
  /** The backend it runs on (LaunchPlan.backend). */
  readonly backend?: string;
  /** The attachment's view (LaunchPlan.attach), such as the RPC workers a model is split across. */
  detail?(): Json;
  /** Settles with the exit code when the process ends, asked to or not. */
  readonly exited: Promise<number>;
  /** Whether the engine was asked to stop (an exit after this is no crash). */
  readonly isStopping: boolean;
  /** The last lines the engine printed, for error messages. */
  readonly lastLines: string;
  /** One health check: true when the engine answers its health path. */
  health(timeoutMs?: number): Promise<boolean>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
  stop(graceMs?: number): Promise<void>;
}

/** An engine's answer to one generation: the media's bytes (empty when it produced none), or the
 * error it reported, with the status the request answers. */
export type Generated = { bytes: Uint8Array<ArrayBuffer> } | { status: number; error: string };

/** One generation in the engine's own API (which may be several requests: a job submitted, polled
 * and fetched), on the engine at `url`, for a request the route has checked. */
export type EngineCall = (url: string, request: Json, signal: AbortSignal) => Promise<Generated>;

/** A recipe whose engine is a server process per model (the launcher starts it). */
export interface Recipe {
  readonly kind?: "server";
  /** The recipe's name in the catalog, e.g. `llamacpp`. */
  readonly name: string;
  /** The engine's name in log lines, e.g. `llama.cpp`. */
  readonly displayName: string;
  /** The recipe option that picks the backend, e.g. `llamacpp_backend`. */
  readonly backendOption?: string;
  /** Source builds that install a backend on this machine, by backend name. */
  readonly builds?: Record<string, BuildRecipe>;
  /** The state of each backend here, as `/v1/system-info` reports it. */
  status(env: EngineEnv): RecipeStatus;
  /** Refuses options the engine cannot take (flags the server sets itself) before anything starts. */
  checkOptions(options: Record<string, unknown>): void;
  /** The backend `auto` (or another alias) stands for on this machine; others as they are. */
  resolveBackend?(backend: string, env: EngineEnv): string;
  /** The engine binary for a backend. Throws NotInstalledError when it can be installed, and
   * EngineConfigError when it cannot run here. Absent for recipes with no server engine. */
  locate?(backend: string, env: EngineEnv): string;
  /** The launch plan for a model on that binary. */
  plan?(binary: string, input: LaunchInput): LaunchPlan;
  /** Checks, before the load queues, what the options need outside this machine (llama.cpp's
   * RPC workers answering); throws when the load could not succeed. */
  precheck?(options: Options, env: EngineEnv): Promise<void>;
  /** Refuses a downloaded model whose files this engine cannot serve (EngineConfigError), before
   * room is made for it. Files are by role, as in LaunchInput. */
  checkFiles?(files: Record<string, string>): void;
  /** The capabilities served by a conversation of the recipe's own rather than one forwarded
   * request (3D and audio generation). */
  readonly generate?: Partial<Record<Capability, EngineCall>>;
}

/** A recipe that runs in the server process, per request: speech (espeak-ng). */
export interface InProcessRecipe {
  readonly kind: "in-process";
  readonly name: string;
  readonly displayName: string;
  knows(voice: string): boolean;
  /** The encoded audio as it is produced; throws when the engine cannot run here. */
  synthesize(text: string, voice: string, speed: number, format: SpeechFormat): ReadableStream<Uint8Array>;
}

/** What a one-shot recipe works on: the model's file, its resolved options and the input. */
export interface OneShotInput {
  modelPath: string;
  options: Options;
  input: Uint8Array;
}

/** A recipe that runs one command per request: ESRGAN upscaling (sd-cli). */
export interface OneShotRecipe {
  readonly kind: "one-shot";
  readonly name: string;
  readonly displayName: string;
  /** The command's output; throws with its last lines when it fails. */
  run(job: OneShotInput, env: EngineEnv, signal?: AbortSignal): Promise<Uint8Array>;
}

/** Every recipe the server registers, of whichever kind. */
export type AnyRecipe = Recipe | InProcessRecipe | OneShotRecipe;

export const isServer = (r: AnyRecipe): r is Recipe => r.kind === undefined || r.kind === "server";

/** Refuses user flags the server sets itself (`option` names the setting they came from). */
export function checkReservedArgs(option: string, reserved: readonly string[], args: string[], why = "the server sets it"): void {
  for (const a of args) {
    const flag = a.split("=")[0]!;
    if (reserved.includes(flag)) {
      throw new EngineConfigError(`${option} may not contain ${flag}: ${why} (refused: ${reserved.join(" ")})`);
    }
  }
}

/** The flags a recipe lets users pass in its `*_args`, as the engine's `--help` lists them: each
 * with whether it takes a value (true: the next word, which may start with `-`, as `--seed -1`;
 * "optional": the next word when it is no flag, as `-fa` or `-fa on`). */
export type AllowedFlags = Readonly<Record<string, boolean | "optional">>;

const NUMBER_WORD = /^-?\d*\.?\d+(e-?\d+)?$/i;

/** Refuses any flag in `args` that is not in `allowed`: the reserved ones (which the server sets)
 * by name, the rest as not a flag users may set, so an engine never starts on a flag that reads
 * arbitrary files, reaches the network, serves other content or exits before it is ready. */
export function checkAllowedArgs(option: string, allowed: AllowedFlags, reserved: readonly string[], args: string[], what: string): void {
  for (let i = 0; i < args.length; i++) {
    const word = args[i]!;
    if (!word.startsWith("-") || NUMBER_WORD.test(word)) {
      throw new EngineConfigError(`${option}: '${word.slice(0, 80)}' is not a flag or a flag's value`);
    }
    const [flag, inline] = [word.split("=")[0]!, word.includes("=") ? word.slice(word.indexOf("=") + 1) : undefined];
    if (reserved.includes(flag)) checkReservedArgs(option, reserved, [flag]);
    if (!(flag in allowed)) {
      throw new EngineConfigError(`${option} may not contain ${flag.slice(0, 80)}: only ${what} flags may be set (allowed: ${Object.keys(allowed).join(" ")})`);
    }
    if (inline !== undefined) continue;
    if (allowed[flag] === "optional") {
      if (i + 1 < args.length && (!args[i + 1]!.startsWith("-") || NUMBER_WORD.test(args[i + 1]!))) i++;
    } else if (allowed[flag]) {
      if (i + 1 >= args.length) throw new EngineConfigError(`${option}: ${flag} needs a value`);
      i++;
    }
  }
}

export function unsupportedBackend(message: string): BackendStatus {
  return { devices: [], state: "unsupported", message, action: "" };
}

/** A binary the user put on PATH, or null. */
export function onPath(binary: string, env: EngineEnv): string | null {
  return Bun.which(binary, { PATH: env.path });
}

/** A backend that runs a binary the user put on PATH. */
export function systemBinaryStatus(binary: string, env: EngineEnv): BackendStatus {
  const found = onPath(binary, env);
  return found
    ? { devices: ["cpu"], state: "installed", message: "", action: "", version: `system (${found})` }
    : unsupportedBackend(`No ${binary} on PATH`);
}

/** A recipe's status, with the first installed (else installable) backend as its default. */
export function recipeStatus(backends: Record<string, BackendStatus>): RecipeStatus {
  const usable =
    Object.entries(backends).find(([, b]) => b.state === "installed") ??
    Object.entries(backends).find(([, b]) => b.state !== "unsupported");
  return usable ? { default_backend: usable[0], backends } : { backends };
}
