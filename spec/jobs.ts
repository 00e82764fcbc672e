// The Job Engine API (lemonade.md "Job Engine API"; the step schema, op set and lifecycle in
// docs/dev/job-system.md, the `${ref}` and `when` language in docs/dev/job-expression-language.md):
// background, durable step lists with pause, interrupt, resume and delete.
import { Type as T, type Static } from "@sinclair/typebox";
import { endpoint } from "./endpoint.ts";
import { E } from "./errors.ts";

const JOB_STATUS = ["queued", "running", "paused", "interrupted", "completed", "failed"] as const;
const STEP_STATUS = ["pending", "running", "completed", "failed", "skipped"] as const;

/** The ops a step may name, with what each does; the server's own operations, run in-process. */
export const JOB_OPS = {
  system_info: { exclusive: false, doc: "the `/system-info` snapshot" },
  system_stats: { exclusive: false, doc: "a CPU, memory, GPU and VRAM sample, as `/system-stats`" },
  models: { exclusive: false, doc: "the model list, or one model's metadata when `params.id` is set" },
  sleep: { exclusive: false, doc: "`{}` after `params.ms` milliseconds (an interrupt cuts it short)" },
  load: { exclusive: true, doc: "loads `params.model` with the `/load` body's options (`ctx_size`, `llamacpp_backend`, `llamacpp_args`, `pinned`, `save_options`, …); outputs `{loaded, model, backend, ctx_size}`" },
  unload: { exclusive: true, doc: "unloads `params.model`, or every model when it is not set; outputs `{}`" },
  chat: { exclusive: true, doc: "`params` is a chat/completions request (not streamed); outputs the backend's answer, `usage` and `timings` included" },
  embeddings: { exclusive: true, doc: "`params` is an `/embeddings` request; outputs its answer" },
  tokenize: { exclusive: true, doc: "`params` is a `/tokenize` body for the most recently used model; outputs its answer" },
  tune: {
    exclusive: true,
    doc: "Lemonade extension: `lemonade tune`'s sweep of `params.model` (`budget_s` 300, `tokens` 32, `runs` 2, `save` true), saving the best as its local tuning overlay; outputs `{before_tokens_per_second, after_tokens_per_second, best, saved, trials}`",
  },
} as const satisfies Record<string, { exclusive: boolean; doc: string }>;

const Branch = T.Object({
  when: T.Optional(T.String({ description: "A condition; the first case that holds decides where the job goes." })),
  goto: T.String({ description: "A later step's id." }),
}, { title: "JobBranchCase" });

const StepDefinition = {
  id: T.String({ description: "Unique within the job; not `inputs`, no `.`. The step's output lands in `context[id]`." }),
  op: T.String({ description: `The operation: ${Object.keys(JOB_OPS).map((o) => `\`${o}\``).join(", ")}.` }),
  params: T.Optional(T.Record(T.String(), T.Unknown(), { description: "The op's parameters; strings may hold `${path}` references into the context." })),
  when: T.Optional(T.String({ description: "A condition; the step is skipped when it is false. Empty or absent: always run." })),
  extract: T.Optional(T.Record(T.String(), T.String(), { description: "Context key -> dotted path into the step's output, copied after it completes." })),
  branch: T.Optional(T.Array(Branch, { description: "Cases tried in order after the step completes." })),
  on_done: T.Optional(T.String({ description: "A later step to go to on success when no branch case holds; default: the next step." })),
  on_fail: T.Optional(T.String({ description: "`abort` (the default) fails the job, `continue` goes to the next step, a later step's id jumps there." })),
};

const StepRecord = T.Object({
  ...StepDefinition,
  params: T.Record(T.String(), T.Unknown(), { description: "The op's parameters, as posted" }),
  status: T.Union(STEP_STATUS.map((s) => T.Literal(s)), { description: "The step's state" }),
  duration_ms: T.Number({ description: "How long its last run took" }),
  failure_handled: T.Optional(T.Boolean({ description: "It failed and `on_fail` carried the job on" })),
  error: T.Optional(T.String({ description: "Why it failed" })),
  output: T.Optional(T.Unknown({ description: "What the op returned" })),
});

const Status = T.Union(JOB_STATUS.map((s) => T.Literal(s)), { description: "The job's state" });

const Summary = T.Object({
  id: T.String({ description: "The job's id" }),
  name: T.String({ description: "The name it was created with" }),
  status: Status,
  created_at: T.String({ description: "When it was created (ISO 8601)" }),
  progress: T.Object(
    {
      cursor: T.String({ description: "The current or next step; empty once the last is done" }),
      completed: T.Integer({ description: "Steps that need no more work: completed, skipped, or failed with the failure handled" }),
      step_count: T.Integer({ description: "Steps in the job" }),
    },
    { description: "How far it got" },
  ),
  finished_at: T.Optional(T.String({ description: "When it completed or failed" })),
  error: T.Optional(T.String({ description: "Why it failed or was interrupted" })),
});

/** A job as the list shows it. */
export type JobSummary = Static<typeof Summary>;

const JobParams = T.Object({ id: T.String({ description: "The job's id" }) });

const Ack = (word: string) => T.Object({ status: T.Literal(word, { description: `Always \`"${word}"\`` }) });

export const jobsCreate = endpoint({
  id: "lemonade.jobs_create",
  method: "POST",
  path: "/jobs",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "Create a job",
  availability: "fully_available",
  description:
    "Queues a job: steps the server runs in the background, one job at a time, passing data forward through the job's `context` (each step's output under its id, `extract`ed keys at the top, the job's `inputs` under `inputs`). After a step completes, the job goes to its first `branch` case that holds, else `on_done`, else the next step; a failed step follows `on_fail`. Every jump goes to a later step, so a job always ends. A job with a `load`, `unload`, `chat`, `embeddings` or `tokenize` step holds the model slot while it runs: other loads, unloads and model requests (a `/tokenize` too) wait until it ends or is paused, and idle eviction waits with them. The jobs and their state are kept in `jobs.json` in the cache directory; a job that was running when the server stopped or crashed is `interrupted` at its step after the next start, ready to resume.",
  notes:
    "References: `${path}` selects into the context by object key or array index; a params string that is exactly one reference keeps the value's JSON type, references inside text are interpolated (`null` as nothing, arrays and objects as compact JSON). A reference that does not resolve fails the step. Conditions (`when`, `branch[].when`): literals (numbers, quoted strings, `true`, `false`, `null`), references, `||`, `&&`, `!`, one comparison (`==` `!=` by value and type; `<` `<=` `>` `>=` on two numbers or two strings), `+ - * /` and unary `-` on numbers, parentheses. `&&` and `||` evaluate both sides. A condition's syntax is checked here (400); its references when it runs.",
  body: T.Object({
    name: T.Optional(T.String({ description: "A name for the job." })),
    steps: T.Optional(T.Array(T.Object(StepDefinition), { description: "The steps, in order." })),
    definition: T.Optional(T.Object({ steps: T.Array(T.Object(StepDefinition)) }, { description: "Accepted in place of `steps`: `{steps}`." })),
    inputs: T.Optional(T.Record(T.String(), T.Unknown(), { description: "Values the steps read as `${inputs.<key>}`." })),
  }),
  response: T.Object({ id: T.String({ description: "The new job's id (answered with status 202)" }) }),
  errors: [E.invalidJob, E.jobLimit],
  example: {
    body: {
      name: "bench",
      inputs: { model: "Qwen3-0.6B-GGUF" },
      steps: [
        { id: "load", op: "load", params: { model: "${inputs.model}", ctx_size: 4096 } },
        { id: "run", op: "chat", params: { model: "${inputs.model}", messages: [{ role: "user", content: "hi" }], max_completion_tokens: 16 }, extract: { tps: "timings.predicted_per_second" } },
        { id: "fast", op: "sleep", params: { ms: 1 }, when: "${tps} > 10" },
      ],
    },
    status: "202 Accepted",
    response: '{"id": "job-20261201-120000-000001"}',
  },
});

export const jobsList = endpoint({
  id: "lemonade.jobs_list",
  method: "GET",
  path: "/jobs",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "List jobs",
  availability: "fully_available",
  description: `Every job's summary, newest first. At most 50 jobs are kept: a new job evicts the oldest completed or failed one. Ops: ${Object.entries(JOB_OPS)
    .map(([op, o]) => `\`${op}\`${o.exclusive ? " (holds the model slot)" : ""}: ${o.doc}`)
    .join("; ")}.`,
  response: T.Object({ jobs: T.Array(Summary, { description: "The jobs" }) }),
  example: {
    response: '{"jobs": [{"id": "job-20261201-120000-000001", "name": "bench", "status": "completed", "created_at": "2026-12-01T12:00:00.000Z", "progress": {"cursor": "", "completed": 3, "step_count": 3}, "finished_at": "2026-12-01T12:00:04.000Z"}]}',
  },
});

export const jobsGet = endpoint({
  id: "lemonade.jobs_get",
  method: "GET",
  path: "/jobs/:id",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "Read a job",
  availability: "fully_available",
  description: "The full job record: its status, each step's state and output, and the context.",
  params: JobParams,
  response: T.Object({
    id: T.String({ description: "The job's id" }),
    name: T.String({ description: "Its name" }),
    status: Status,
    inputs: T.Record(T.String(), T.Unknown(), { description: "Its inputs" }),
    context: T.Record(T.String(), T.Unknown(), { description: "The data the steps passed forward" }),
    steps: T.Array(StepRecord, { description: "The steps, with their state" }),
    cursor: T.String({ description: "The current or next step; empty once the last is done" }),
    created_at: T.String({ description: "When it was created" }),
    started_at: T.Optional(T.String({ description: "When it first ran" })),
    finished_at: T.Optional(T.String({ description: "When it completed or failed" })),
    error: T.Optional(T.String({ description: "Why it failed or was interrupted" })),
  }),
  errors: [E.jobNotFound],
  example: { path: "/v1/jobs/job-20261201-120000-000001" },
});

export const jobsPause = endpoint({
  id: "lemonade.jobs_pause",
  method: "POST",
  path: "/jobs/:id/pause",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "Pause a job after its current step",
  availability: "fully_available",
  description:
    "A running job stops after its current step (and lets other model traffic through); a queued one is paused at once. The models it loaded stay loaded, and still the job's, for the resume.",
  params: JobParams,
  response: Ack("pausing"),
  errors: [E.jobNotFound, E.jobNotActive],
  example: { path: "/v1/jobs/job-20261201-120000-000001/pause", response: '{"status": "pausing"}' },
});

export const jobsInterrupt = endpoint({
  id: "lemonade.jobs_interrupt",
  method: "POST",
  path: "/jobs/:id/interrupt",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "Interrupt a job's current step",
  availability: "fully_available",
  description:
    "Cancels the current step now (an in-flight load or chat is aborted); the step goes back to `pending` and the job to `interrupted`, resumable. The models the job itself loaded are unloaded; models that were loaded before it, or loaded by others meanwhile, stay, with their pin state as before the job.",
  params: JobParams,
  response: Ack("interrupting"),
  errors: [E.jobNotFound, E.jobNotActive],
  example: { path: "/v1/jobs/job-20261201-120000-000001/interrupt", response: '{"status": "interrupting"}' },
});

export const jobsResume = endpoint({
  id: "lemonade.jobs_resume",
  method: "POST",
  path: "/jobs/:id/resume",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "Resume a paused or interrupted job",
  availability: "fully_available",
  description:
    "Queues the job again at its cursor: a paused job goes on with its next step, an interrupted one runs its pending step again. First the models its completed `load` steps left resident are loaded again where they are gone (after an interrupt, or a restart); a same-named model someone else loaded meanwhile is used as it is and stops being the job's.",
  params: JobParams,
  response: Ack("resuming"),
  errors: [E.jobNotFound, E.jobNotResumable],
  example: { path: "/v1/jobs/job-20261201-120000-000001/resume", response: '{"status": "resuming"}' },
});

export const jobsDelete = endpoint({
  id: "lemonade.jobs_delete",
  method: "DELETE",
  path: "/jobs/:id",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "Delete a job",
  availability: "fully_available",
  description:
    "Removes the job. An active, paused or interrupted job is marked deleted in `jobs.json` before the answer (it is gone from the list at once and stays gone after a crash), then interrupted, and erased once the models it loaded are unloaded.",
  params: JobParams,
  response: Ack("deleted"),
  errors: [E.jobNotFound],
  example: { path: "/v1/jobs/job-20261201-120000-000001", response: '{"status": "deleted"}' },
});
