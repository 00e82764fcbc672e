// The Job Engine API: each route one call of protocols/jobs.ts or the engine (runtime/jobs.ts).
import { jobs as spec } from "../../spec/index.ts";
import type { ServerContext } from "../../runtime/context.ts";
import { createJob, deleteJob, interruptJob, pauseJob, resumeJob } from "../../protocols/jobs.ts";
import type { Binder } from "../bind.ts";

export function jobRoutes(bind: Binder, ctx: Pick<ServerContext, "jobs">): void {
  bind.http(spec.jobsCreate, ({ body }) => createJob(ctx, body));
  bind.http(spec.jobsList, () => ({ jobs: ctx.jobs.list() }));
  bind.http(spec.jobsGet, ({ params }) => ctx.jobs.get(params.id));
  bind.http(spec.jobsPause, ({ params }) => pauseJob(ctx, params.id));
  bind.http(spec.jobsInterrupt, ({ params }) => interruptJob(ctx, params.id));
  bind.http(spec.jobsResume, ({ params }) => resumeJob(ctx, params.id));
  bind.http(spec.jobsDelete, ({ params }) => deleteJob(ctx, params.id));
}
