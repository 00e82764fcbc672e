// Installing and removing backends as /v1/install and /v1/uninstall ask for it: a recipe's backend
// (built or fetched by runtime/backends.ts, at once, as Server-Sent Events, or as a server-owned
// download job), or a cloud provider with `backend: "cloud"` (models/cloud.ts).
import { E } from "../spec/errors.ts";
import type { InstallDryRunRequest, InstallDryRunResponse, InstallRequest, InstallResponse, UninstallRequest, UninstallResponse } from "../spec/backends.ts";
import { ApiError } from "../lib/api-error.ts";
import { DownloadStopped } from "../models/downloads.ts";
import { sseResponse } from "../lib/sse.ts";
import type { ServerContext } from "../runtime/context.ts";
import type { FileProgress } from "../runtime/backends.ts";
import { openaiErrorBody } from "./openai.ts";

/** The answers for a cloud provider (`backend: "cloud"`). */
type CloudInstalled = Extract<InstallResponse, { backend: "cloud" }>;
type CloudUninstalled = Extract<UninstallResponse, { backend: "cloud" }>;

/** A cloud provider's refusal in the shape Lemonade gives it (`{"error": {message, type, ...}}`),
 * where a backend's is the route's flat one. */
async function cloudAnswer<T>(run: () => T | Promise<T>): Promise<T | Response> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof ApiError) return Response.json(openaiErrorBody(err), { status: err.status });
    throw err;
  }
}

const required = (value: string | undefined, field: string): string => {
  if (!value) throw ApiError.of(E.missingArgument, `Missing required argument '${field}' (backend "cloud")`, field);
  return value;
};

async function installCloud(ctx: Pick<ServerContext, "cloud">, body: InstallRequest): Promise<CloudInstalled> {
  const provider = required(body.provider, "provider");
  if (body.members && body.base_url) throw ApiError.of(E.invalidArgument, "Give base_url for one server or members for a pool, not both", "members");
  const result = await ctx.cloud.install(provider, body.members ?? required(body.base_url, "base_url"), {
    apiKey: body.api_key,
    wire: body.wire,
    allowInsecureHttp: body.allow_insecure_http,
    authHeaderName: body.auth_header_name,
    authHeaderPrefix: body.auth_header_prefix,
  });
  return { status: "success", backend: "cloud", provider, ...result };
}

function uninstallCloud(ctx: Pick<ServerContext, "cloud">, body: UninstallRequest): CloudUninstalled {
  const provider = required(body.provider, "provider");
  return { status: "success", backend: "cloud", provider, models_evicted: ctx.cloud.uninstall(provider) };
}

/** `recipe` is required on /v1/install and /v1/uninstall unless `backend` is "cloud". */
function requiredRecipe(recipe: string | undefined): string {
  if (!recipe) throw ApiError.of(E.missingArgument, "Missing required argument 'recipe'", "recipe");
  return recipe;
}

/** A release download's file and bytes in the fields Lemonade's download progress names them by. */
const fileFields = (file: FileProgress) => ({
  file: file.file,
  file_index: 1,
  total_files: 1,
  bytes_downloaded: file.bytes,
  bytes_total: file.total,
  total_download_size: file.total,
});

/** `stream: true, subscribe: false`: the install as a job of the download manager, named as
 * Lemonade names it (`backend:<recipe>:<backend>`), its release download reported as the job's one
 * file. Stopped through /v1/downloads/control or /v1/installs/cancel, it ends `cancelled`. */
function installJob(ctx: Pick<ServerContext, "backends" | "downloads">, recipe: string, backend: string, force: boolean) {
  const name = `${recipe}:${backend}`;
  return ctx.downloads.startTask(
    `backend:${name}`,
    "backend",
    name,
    (report) =>
      ctx.backends
        .install(
          recipe,
          backend,
          (_phase, percent, file) => report({ ...(file ? fileFields(file) : {}), percent }),
          force,
        )
        .catch((err) => {
          throw err instanceof ApiError && err.code === E.installCancelled.code ? new DownloadStopped("cancelled") : err;
        }),
    () => void ctx.backends.stopInstall(recipe, backend),
  );
}

/** POST /v1/install. */
export async function install(ctx: Pick<ServerContext, "backends" | "cloud" | "downloads">, body: InstallRequest): Promise<InstallResponse | Response> {
  if (body.backend === "cloud") return cloudAnswer(() => installCloud(ctx, body));
  const { backend } = body;
  const recipe = requiredRecipe(body.recipe);
  const result: InstallResponse = { status: "success", recipe, backend };
  const force = body.force === true;
  if (body.stream !== true) {
    await ctx.backends.install(recipe, backend, undefined, force);
    return result;
  }
  // Refuse what cannot be installed here with a plain 400 before the event stream or job starts.
  await ctx.backends.checkInstallable(recipe, backend, force);
  if (body.subscribe === false) return installJob(ctx, recipe, backend, force);
  return sseResponse(async (send) => {
    await ctx.backends.install(recipe, backend, (phase, percent, file) => send("progress", { phase, percent, ...(file ? fileFields(file) : {}) }), force);
    send("complete", { recipe, backend, percent: 100 });
  });
}

/** POST /v1/uninstall. */
export async function uninstall(ctx: Pick<ServerContext, "backends" | "cloud">, body: UninstallRequest): Promise<UninstallResponse | Response> {
  if (body.backend === "cloud") return cloudAnswer(() => uninstallCloud(ctx, body));
  const recipe = requiredRecipe(body.recipe);
  // Uninstalling what is gone already succeeds: the state asked for is the state there is.
  if (await ctx.backends.uninstall(recipe, body.backend)) return { status: "success", recipe, backend: body.backend };
  return { status: "success", recipe, backend: body.backend, message: `${recipe}:${body.backend} was not installed` };
}

/** POST /v1/install/dry-run: what `/v1/install` would fetch; nothing is downloaded. */
export function installDryRun(ctx: Pick<ServerContext, "backends">, body: InstallDryRunRequest): InstallDryRunResponse {
  const arch = body.arch ?? "";
  const plan = ctx.backends.dryRun(body.recipe, body.backend, arch);
  // No backend here is published as an archive split into parts.
  return { recipe: body.recipe, backend: body.backend, arch, ...plan, supports_split_archive: false };
}
