// A job's step graph (docs/dev/job-system.md): the steps as a client posts them, the checks made
// at creation (unique ids, known ops, forward-only targets, condition syntax), and where control
// goes after a step. Pure; the job engine (runtime/jobs.ts) runs what passes.
import { evalCondition, syntaxError } from "./job-expr.ts";
import type { JsonValue } from "./json.ts";

export type StepStatus = "pending" | "running" | "completed" | "failed" | "skipped";

export interface BranchCase {
  when: string;
  goto: string;
}

/** One step: what the client posted, and what running it recorded. */
export interface Step {
  id: string;
  op: string;
  params: { [key: string]: JsonValue };
  when?: string;
  /** Context key -> path into the step's output. */
  extract?: { [key: string]: string };
  branch?: BranchCase[];
  on_done?: string;
  /** `abort` (the default), `continue`, or a later step's id. */
  on_fail?: string;
  status: StepStatus;
  /** The step failed and `on_fail` carried on (continue or a recovery step). */
  failure_handled?: boolean;
  duration_ms: number;
  error?: string;
  output?: JsonValue;
}

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The steps of a create body, or the first reason they are no valid step list. */
export function parseSteps(raw: unknown): Step[] | string {
  if (!Array.isArray(raw)) return "'steps' (or 'definition.steps') must be an array of steps";
  const steps: Step[] = [];
  for (const [i, s] of raw.entries()) {
    if (!isRecord(s)) return `step ${i} is not an object`;
    if (s.params !== undefined && !isRecord(s.params)) return `step ${i}'s params must be an object`;
    if (s.extract !== undefined && (!isRecord(s.extract) || Object.values(s.extract).some((p) => typeof p !== "string"))) {
      return `step ${i}'s extract must map context keys to output paths`;
    }
    if (s.branch !== undefined && (!Array.isArray(s.branch) || s.branch.some((c) => !isRecord(c)))) return `step ${i}'s branch must be an array of {when, goto}`;
    for (const key of ["id", "op", "when", "on_done", "on_fail"] as const) {
      if (s[key] !== undefined && typeof s[key] !== "string") return `step ${i}'s ${key} must be a string`;
    }
    steps.push({
      id: str(s.id) ?? "",
      op: str(s.op) ?? "",
      params: (s.params ?? {}) as Step["params"],
      ...(str(s.when) ? { when: str(s.when) } : {}),
      ...(s.extract && Object.keys(s.extract).length ? { extract: s.extract as Step["extract"] } : {}),
      ...(Array.isArray(s.branch) && s.branch.length
        ? { branch: (s.branch as Record<string, unknown>[]).map((c) => ({ when: str(c.when) ?? "", goto: str(c.goto) ?? "" })) }
        : {}),
      ...(str(s.on_done) ? { on_done: str(s.on_done) } : {}),
      ...(str(s.on_fail) && s.on_fail !== "abort" ? { on_fail: str(s.on_fail) } : {}),
      status: "pending",
      duration_ms: 0,
    });
  }
  return steps;
}

/** The first reason a step list is no valid job, or null. Every jump goes to a later step, so a
 * job always ends. */
export function validateSteps(steps: Step[], knownOps: ReadonlySet<string>): string | null {
  if (steps.length === 0) return "a job needs at least one step";
  const index = new Map<string, number>();
  for (const [i, s] of steps.entries()) {
    if (!s.id) return `step ${i} has no id`;
    if (s.id === "inputs") return "step id 'inputs' is reserved for the job's inputs";
    if (s.id.includes(".")) return `step id '${s.id}' must not contain '.'`;
    if (index.has(s.id)) return `duplicate step id '${s.id}'`;
    index.set(s.id, i);
  }
  const forward = (from: number, target: string, field: string): string | null => {
    const to = index.get(target);
    if (to === undefined) return `${field} target '${target}' of step '${steps[from]!.id}' is no step of this job`;
    if (to <= from) return `${field} target '${target}' of step '${steps[from]!.id}' must be a later step (jobs do not loop)`;
    return null;
  };
  for (const [i, s] of steps.entries()) {
    if (!s.op) return `step '${s.id}' has no op`;
    if (!knownOps.has(s.op)) return `step '${s.id}' uses unknown op '${s.op}' (known: ${[...knownOps].join(", ")})`;
    const when = s.when ? syntaxError(s.when) : null;
    if (when) return `step '${s.id}' when: ${when}`;
    if (s.on_done) {
      const err = forward(i, s.on_done, "on_done");
      if (err) return err;
    }
    for (const c of s.branch ?? []) {
      if (!c.goto) return `a branch case of step '${s.id}' has no goto`;
      const target = forward(i, c.goto, "branch goto");
      if (target) return target;
      const syntax = c.when ? syntaxError(c.when) : null;
      if (syntax) return `step '${s.id}' branch when: ${syntax}`;
    }
    if (s.on_fail && s.on_fail !== "continue") {
      const err = forward(i, s.on_fail, "on_fail");
      if (err) return err;
    }
  }
  return null;
}

/** The step after `id` in list order; "" at the end. */
export function nextInList(steps: Step[], id: string): string {
  const i = steps.findIndex((s) => s.id === id);
  return steps[i + 1]?.id ?? "";
}

/** Where a completed step leads: its first branch case that holds, else on_done, else the next step. */
export function nextAfterSuccess(steps: Step[], step: Step, context: JsonValue): string {
  for (const c of step.branch ?? []) if (evalCondition(c.when, context)) return c.goto;
  return step.on_done ?? nextInList(steps, step.id);
}

/** Steps that need no more work: completed, skipped, or failed with the failure handled. */
export function doneSteps(steps: Step[]): number {
  return steps.filter((s) => s.status === "completed" || s.status === "skipped" || (s.status === "failed" && s.failure_handled)).length;
}
