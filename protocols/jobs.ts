// The Job Engine API (spec/jobs.ts): the ops a step runs, each one of the server's own operations
// called in-process (the lifecycle's load and unload, the proxy for chat, embeddings and tokenize,
// system info and stats, the model list), and the routes' calls into the engine (runtime/jobs.ts).
import type { Static } from "@sinclair/typebox";
import { openai } from "../spec/index.ts";
import type * as jobsSpec from "../spec/jobs.ts";
import { JOB_OPS } from "../spec/jobs.ts";
import { sharedEnginePath } from "../spec/recipes.ts";
import type { JsonValue } from "../lib/json.ts";
import type { ServerContext } from "../runtime/context.ts";
import type { JobOp } from "../runtime/jobs.ts";
import { load, unload } from "./lifecycle.ts";
import { listModels, modelObject } from "./models.ts";
import { needs, needsEmbedder, needsLlm, toEngineBody } from "./openai.ts";
import { systemInfo } from "./operations.ts";
import { checkedRequest } from "./request-check.ts";
import { tuneOp } from "./tuning.ts";
import { devices } from "../lib/devices.ts";

type CreateBody = Static<typeof jobsSpec.jobsCreate.body>;
type JsonObject = { [key: string]: JsonValue };

export type JobOpsContext = Pick<
  ServerContext,
  "aliases" | "backends" | "catalog" | "cloud" | "config" | "hostStats" | "library" | "options" | "proxy" | "recipeOptions" | "rpcWorkers" | "scheduler" | "tuning"
>;

/** A server answer as plain JSON, as the job's record keeps it. */
const plain = (value: unknown): JsonValue => JSON.parse(JSON.stringify(value)) as JsonValue;

/** What came back from an in-process call, as a step's output; an error answer fails the step with its message. */
async function answer(res: Response): Promise<JsonValue> {
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  if (res.ok) return body as JsonValue;
  const err = (body as { error?: unknown; message?: unknown } | null) ?? {};
  const message = typeof err.error === "string" ? err.error : typeof (err.error as { message?: unknown })?.message === "string" ? (err.error as { message: string }).message : typeof err.message === "string" ? err.message : text;
  throw new Error(`${message} (status ${res.status})`);
}

/** Settles with `work`, or rejects as soon as `signal` aborts; `late` gets a result that came after. */
function cancellable<T>(work: Promise<T>, signal: AbortSignal, late: (value: T) => void = () => {}): Promise<T> {
  if (signal.aborted) return Promise.reject(new Error("interrupted"));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      reject(new Error("interrupted"));
      work.then(late, () => {});
    };
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(
      (v) => (signal.removeEventListener("abort", onAbort), resolve(v)),
      (e) => (signal.removeEventListener("abort", onAbort), reject(e)),
    );
  });
}

/** The op registry: every op spec/jobs.ts lists, with its exclusivity from there. */
export function jobOps(ctx: JobOpsContext): Record<string, JobOp> {
  const instanceOf = (id: string) => ctx.scheduler.list().find((s) => s.model.id === id);
  const runs: Record<keyof typeof JOB_OPS, JobOp["run"]> = {
    system_info: async () => plain(systemInfo(ctx)),
    system_stats: async () => plain(await ctx.hostStats.read()),
    models: async (params) =>
      plain(typeof params.id === "string" ? modelObject(ctx, ctx.catalog.get(params.id), false, { id: params.id }) : listModels(ctx, false, false)),
    sleep: (params, signal) => {
      const ms = Number(params.ms ?? 0);
      return cancellable(new Promise<JsonValue>((resolve) => setTimeout(() => resolve({}), Number.isFinite(ms) ? Math.max(0, ms) : 0)), signal);
    },
    load: async (params, signal) => {
      const { model, ...options } = params;
      if (typeof model !== "string" || !model) throw new Error("the load op needs params.model");
      const id = ctx.catalog.get(model).id;
      const before = instanceOf(id);
      // An interrupted load that lands later is not the job's to keep: it goes again, unless it was there before.
      await cancellable(load(ctx, { ...options, model_name: model } as Parameters<typeof load>[1]), signal, () => {
        if (instanceOf(id) !== before) void ctx.scheduler.unload(id);
      });
      const instance = instanceOf(id);
      const backend = Object.entries(instance?.spec.options ?? {}).find(([k]) => k.endsWith("_backend"))?.[1];
      return { loaded: true, model: id, backend: typeof backend === "string" ? backend : null, ctx_size: instance?.spec.ctxSize ?? null };
    },
    unload: async (params) => {
      const model = typeof params.model === "string" ? params.model : undefined;
      // Unloading a model that is not loaded leaves what the step asks for: nothing of it resident.
      if (model === undefined || ctx.scheduler.list().some((s) => s.model.id === ctx.catalog.find(model)?.id)) await unload(ctx, model);
      return {};
    },
    chat: async (params, signal) => {
      // A chat step's params are a chat request, checked as the route would check its body.
      const request = checkedRequest(openai.chatCompletions.body, { ...params, stream: false }, "The chat step's params are not a chat request");
      const { engineBody, loadOptions } = toEngineBody(request);
      return answer(
        await ctx.proxy.toModel({
          model: String(params.model ?? ""),
          path: "/v1/chat/completions",
          body: engineBody,
          check: needsLlm(),
          loadOptions,
          signal,
          endpoint: "chat_completions",
          generation: true,
          client: request,
        }),
      );
    },
    embeddings: async (params, signal) => {
      const { engineBody, loadOptions } = toEngineBody(params);
      return answer(
        await ctx.proxy.toModel({ model: String(params.model ?? ""), path: "/v1/embeddings", body: engineBody, check: needsEmbedder, loadOptions, signal, endpoint: "embeddings", generation: false }),
      );
    },
    tune: (params, signal) =>
      tuneOp(ctx, params, signal, { load: (body) => load(ctx, body as Parameters<typeof load>[1]), chat: (request) => runs.chat(request as JsonObject, signal) }, devices().cpu.threads).then(plain),
    tokenize: async (params, signal) =>
      answer(await ctx.proxy.toRecent({ method: "POST", path: sharedEnginePath("tokenize"), body: params, signal, endpoint: "tokenize", check: needs("tokenize") })),
  };
  return Object.fromEntries(Object.entries(runs).map(([name, run]) => [name, { exclusive: JOB_OPS[name as keyof typeof JOB_OPS].exclusive, run }]));
}

/** POST /v1/jobs: 202 with the new job's id. */
export function createJob(ctx: Pick<ServerContext, "jobs">, body: CreateBody): Response {
  const id = ctx.jobs.create(body.name ?? "", body.definition?.steps ?? body.steps, (body.inputs ?? {}) as JsonObject);
  return Response.json({ id }, { status: 202 });
}

export function pauseJob(ctx: Pick<ServerContext, "jobs">, id: string) {
  ctx.jobs.pause(id);
  return { status: "pausing" as const };
}

export function interruptJob(ctx: Pick<ServerContext, "jobs">, id: string) {
  ctx.jobs.interrupt(id);
  return { status: "interrupting" as const };
}

export function resumeJob(ctx: Pick<ServerContext, "jobs">, id: string) {
  ctx.jobs.resume(id);
  return { status: "resuming" as const };
}

export function deleteJob(ctx: Pick<ServerContext, "jobs">, id: string) {
  ctx.jobs.delete(id);
  return { status: "deleted" as const };
}
