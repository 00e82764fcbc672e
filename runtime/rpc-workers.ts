// The RPC workers this server may split models across, as `/v1/system-info` and the dashboard
// show them: each one's last health check (TCP, TLS, the secret's proof, rpc-server's HELLO and
// device memory). A view never waits on a worker: it answers with the last checks and starts new
// ones when those are stale, so a worker slow to answer slows nothing but its own row.
import { parseWorkerAddress, RpcWorkerError, statusProblem, type WorkerStatus } from "../engines/rpc-address.ts";
import type { RpcSettings } from "../engines/engine.ts";
import type { Clock } from "../lib/clock.ts";

export interface WorkerView {
  address: string;
  /** `checking` until the first check ends; `ready`, or `unavailable` with the reason. */
  state: "checking" | "ready" | "unavailable";
  error?: string;
  protocol?: string;
  devices: { name: string; description: string; free_bytes: number; total_bytes: number }[];
  /** Whether rpc-server is serving a model now (it serves one client at a time). */
  busy: boolean;
  checked_at?: number;
}

const STALE_MS = 5000;

export class RpcWorkers {
  private readonly views = new Map<string, WorkerView>();
  private checkedAt = 0;
  private running: Promise<void> | null = null;

  constructor(
    private readonly settings: RpcSettings,
    private readonly clock: Clock,
  ) {
    for (const address of settings.workers) this.views.set(address, { address, state: "checking", devices: [], busy: false });
    // Checked from the start, so that the first load's memory admission knows the workers.
    if (settings.workers.length) void this.refresh();
  }

  /** The last checks, starting fresh ones when they are stale. */
  list(): WorkerView[] {
    if (this.settings.workers.length && this.clock.now() - this.checkedAt > STALE_MS) void this.refresh();
    return [...this.views.values()];
  }

  /** The free memory of the workers a model's `rpc` option names (`all`: every configured one)
   * that answered their last check; null while one of them has not been checked yet. */
  freeBytes(option: string): number | null {
    const views = this.list();
    const named = option === "all" ? views : views.filter((v) => option.split(",").map((w) => w.trim()).includes(v.address));
    if (named.some((v) => v.state === "checking")) return null;
    // A busy worker's memory is what it had free before its model loaded: right for the model
    // this load replaces; another's is refused at the load itself.
    return named.filter((v) => v.state === "ready").reduce((sum, v) => sum + v.devices.reduce((s, d) => s + d.free_bytes, 0), 0);
  }

  /** Checks every worker at once; settles when all have answered or timed out. */
  refresh(): Promise<void> {
    this.running ??= Promise.all(this.settings.workers.map((w) => this.check(w))).then(() => {
      this.checkedAt = this.clock.now();
      this.running = null;
    });
    return this.running;
  }

  private async check(text: string): Promise<void> {
    const at = Math.floor(this.clock.now() / 1000);
    try {
      const address = parseWorkerAddress(text);
      if (!this.settings.secret) throw new RpcWorkerError(text, "no secret is set (LEMONADE_RPC_SECRET or llamacpp.rpc_secret)");
      // Loaded on first use: a server with no workers never loads node:tls.
      const { probeWorker } = await import("../engines/rpc-link.ts");
      const status: WorkerStatus = await probeWorker(address, this.settings.secret, this.settings.timeoutMs);
      const problem = statusProblem(address, status, false);
      this.views.set(text, {
        address: text,
        state: problem ? "unavailable" : "ready",
        ...(problem ? { error: problem } : {}),
        protocol: status.protocol,
        devices: status.devices.map((d) => ({ name: d.name, description: d.description, free_bytes: d.free, total_bytes: d.total })),
        busy: status.clients > 0,
        checked_at: at,
      });
    } catch (err) {
      this.views.set(text, { address: text, state: "unavailable", error: (err as Error).message, devices: [], busy: false, checked_at: at });
    }
  }
}
