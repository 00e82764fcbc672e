// A pool of remote servers that serve one cloud provider's models as replicas (models/cloud.ts
// `members`): which member a request goes to (the healthy one with the fewest requests in flight,
// ties taken in turn), which members are down, and when a down one is asked again (a probe after a
// back-off that doubles while it keeps failing). It holds no keys: the probe it is given finds
// them. Members are named by their base URL, which carries no credentials (models/cloud.ts refuses
// one that does).
import { ApiError } from "../lib/api-error.ts";
import type { Clock } from "../lib/clock.ts";
import { E } from "../spec/errors.ts";

/** A member as /v1/health reports it. */
export interface MemberHealth {
  url: string;
  state: "up" | "down";
  in_flight: number;
  last_error: string | null;
  /** When a down member is probed next (Unix seconds); null while it is up. */
  next_retry: number | null;
}

/** A request's hold on one member, for as long as it is in flight there. */
export interface MemberClaim {
  url: string;
  /** The request is over; idempotent. */
  done(): void;
  /** The member failed the request before any of it reached the client: it is down. */
  failed(why: string): void;
  /** Whether the member answers its probe now, within `timeoutMs` (the hang check of a request
   * it is silent on). */
  health(timeoutMs?: number): Promise<boolean>;
}

/** The first back-off after a member fails, doubled on each failed probe up to the last. */
export const FIRST_RETRY_MS = 1000;
export const LAST_RETRY_MS = 60_000;

interface Member {
  url: string;
  down: boolean;
  inflight: number;
  lastError: string | null;
  /** Failures in a row: the back-off's exponent. */
  failures: number;
  nextRetry: number | null;
  cancelRetry: () => void;
}

export interface PoolDeps {
  clock: Clock;
  /** Resolves when the member answers (its `GET /models`) within `timeoutMs` (absent: the probe's
   * own limit), rejects with why not. */
  probe(url: string, timeoutMs?: number): Promise<void>;
  log: { info(message: string): void; warn(message: string): void };
}

export class Pool {
  private members: Member[] = [];
  /** Where the next tie is broken from, so that idle members take requests in turn. */
  private turn = 0;

  constructor(
    readonly provider: string,
    private readonly deps: PoolDeps,
  ) {}

  /** Takes the member list as installed now, keeping what is known of those that stay. */
  sync(urls: string[]): void {
    const known = new Map(this.members.map((m) => [m.url, m]));
    for (const m of this.members) if (!urls.includes(m.url)) m.cancelRetry();
    this.members = urls.map((url) => known.get(url) ?? { url, down: false, inflight: 0, lastError: null, failures: 0, nextRetry: null, cancelRetry: () => {} });
  }

  /** The member the next request goes to: of the healthy ones not yet tried for it, the one with
   * the fewest requests in flight; undefined when none is left. */
  pick(tried: ReadonlySet<string> = new Set()): MemberClaim | undefined {
    const n = this.members.length;
    const open = this.members.filter((m) => !m.down && !tried.has(m.url));
    if (!open.length) return undefined;
    const least = Math.min(...open.map((m) => m.inflight));
    for (let i = 0; i < n; i++) {
      const at = (this.turn + i) % n;
      const m = this.members[at]!;
      if (m.down || tried.has(m.url) || m.inflight !== least) continue;
      this.turn = at + 1;
      return this.claim(m);
    }
    return undefined;
  }

  private claim(m: Member): MemberClaim {
    m.inflight++;
    let over = false;
    return {
      url: m.url,
      done: () => {
        if (over) return;
        over = true;
        m.inflight--;
      },
      failed: (why) => this.markDown(m, why),
      health: (timeoutMs) => this.deps.probe(m.url, timeoutMs).then(() => true, () => false),
    };
  }

  /** A member failed: down until a probe finds it answering again. A member already down (two
   * requests failing at once) keeps the back-off it has. */
  private markDown(m: Member, why: string): void {
    m.lastError = why;
    if (m.down) return;
    m.down = true;
    this.deps.log.warn(`Pool ${this.provider}: member ${m.url} is down (${why})`);
    this.scheduleRetry(m);
  }

  private scheduleRetry(m: Member): void {
    m.failures++;
    const wait = Math.min(LAST_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.min(m.failures - 1, 16));
    m.nextRetry = this.deps.clock.now() + wait;
    m.cancelRetry = this.deps.clock.after(wait, () => void this.retry(m));
  }

  private async retry(m: Member): Promise<void> {
    try {
      await this.deps.probe(m.url);
    } catch (err) {
      // A member removed meanwhile is not asked again.
      if (!this.members.includes(m)) return;
      m.lastError = (err as Error).message;
      this.scheduleRetry(m);
      return;
    }
    if (!this.members.includes(m)) return;
    m.down = false;
    m.failures = 0;
    m.nextRetry = null;
    this.deps.log.info(`Pool ${this.provider}: member ${m.url} answers again`);
  }

  health(): MemberHealth[] {
    return this.members.map((m) => ({
      url: m.url,
      state: m.down ? "down" : "up",
      in_flight: m.inflight,
      last_error: m.lastError,
      next_retry: m.nextRetry === null ? null : m.nextRetry / 1000,
    }));
  }

  /** The 503 for a request no member is left to serve: each member named with its last error,
   * and Retry-After the soonest probe. */
  unavailable(modelId: string): ApiError {
    const now = this.deps.clock.now();
    const soonest = Math.min(...this.members.map((m) => m.nextRetry ?? now));
    const each = this.members.map((m) => `${m.url} (${m.down ? `down: ${m.lastError ?? "failed"}` : "failed this request"})`).join(", ");
    return ApiError.of(E.poolUnavailable, `No member of the ${this.provider} pool can serve ${modelId} now: ${each}; try again`).with({
      retryable: true,
      retryAfterS: Math.max(1, Math.ceil((soonest - now) / 1000)),
      fromEngine: true,
    });
  }

  /** Stops every pending probe. */
  close(): void {
    for (const m of this.members) m.cancelRetry();
  }
}

/** The pools, one per provider that has members; what they are asked about is the provider's
 * member list as installed now. */
export class Pools {
  private readonly pools = new Map<string, Pool>();

  constructor(
    private readonly deps: Omit<PoolDeps, "probe"> & {
      /** The provider's members now; undefined once it is no longer a pool. */
      members(provider: string): string[] | undefined;
      probe(provider: string, url: string, timeoutMs?: number): Promise<void>;
    },
  ) {}

  /** The provider's pool, its members brought up to date; undefined for one that is not a pool. */
  of(provider: string): Pool | undefined {
    const urls = this.deps.members(provider);
    let pool = this.pools.get(provider);
    if (!urls) {
      pool?.close();
      this.pools.delete(provider);
      return undefined;
    }
    if (!pool) {
      pool = new Pool(provider, {
        clock: this.deps.clock,
        log: this.deps.log,
        probe: async (url, timeoutMs) => {
          // A member no longer installed is not asked again (and the pool goes with its provider).
          if (!this.deps.members(provider)?.includes(url)) {
            this.of(provider);
            return;
          }
          await this.deps.probe(provider, url, timeoutMs);
        },
      });
      this.pools.set(provider, pool);
    }
    pool.sync(urls);
    return pool;
  }

  close(): void {
    for (const pool of this.pools.values()) pool.close();
    this.pools.clear();
  }
}
