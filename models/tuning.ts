// Auto-tune's data (auto-tune.md phases 2, 3, 5): the profile document in use (the bundled one, or
// one fetched from a configurable URL and cached with its version and age), the profile that
// matches this machine's archetype, and each model's locally tuned overlay (`lemonade tune`).
// The merge of these layers with the model's options is models/recipe-options.ts's.
import { join } from "node:path";
import { Value } from "@sinclair/typebox/value";
import type { Archetype } from "../lib/archetype.ts";
import type { Clock } from "../lib/clock.ts";
import { CorruptStateFileError, readJsonFile, writeJsonFileAtomic } from "../lib/json-file.ts";
import { ProfileDocument, TuningParams, type ArchetypeProfileT, type ProfileDocumentT, type TuningParamsT } from "../spec/tuning.ts";
import bundled from "./tuning-profiles.json" with { type: "json" };

/** A cached document older than this is fetched again (at start-up, and when asked). */
export const PROFILE_MAX_AGE_MS = 24 * 3600 * 1000;

/** Why a profile document is not one (the first problem), or null. */
export function documentProblem(doc: unknown): string | null {
  const error = Value.Errors(ProfileDocument, doc).First();
  return error ? `${error.path || "/"}: ${error.message}` : null;
}

function asDocument(doc: unknown, what: string): ProfileDocumentT {
  const problem = documentProblem(doc);
  if (problem) throw new Error(`${what} is not a profile document: ${problem}`);
  return doc as ProfileDocumentT;
}

let bundledChecked: ProfileDocumentT | undefined;

/** The profiles shipped with the server (models/tuning-profiles.json), checked against the schema
 * when first asked for: the check walks the whole document, which start-up need not pay for. */
export function bundledProfiles(): ProfileDocumentT {
  bundledChecked ??= asDocument(bundled, "models/tuning-profiles.json");
  return bundledChecked;
}

/** The profile for an archetype: its exact id, else its family, else the longest `prefix-*`. */
export function profileFor(doc: ProfileDocumentT, archetype: Pick<Archetype, "id" | "family">): ArchetypeProfileT | undefined {
  const exact = doc.profiles.find((p) => p.archetype === archetype.id) ?? doc.profiles.find((p) => p.archetype === archetype.family);
  if (exact) return exact;
  return doc.profiles
    .filter((p) => p.archetype.endsWith("*") && archetype.id.startsWith(p.archetype.slice(0, -1)))
    .sort((a, b) => b.archetype.length - a.archetype.length)[0];
}

/** Parameters by `recipe:backend`, else by recipe. */
export function paramsFor(byBackend: Record<string, TuningParamsT> | undefined, recipe: string, backend: string): TuningParamsT | undefined {
  return byBackend?.[`${recipe}:${backend}`] ?? byBackend?.[recipe];
}

interface CachedProfiles {
  url: string;
  fetched_at: number;
  document: ProfileDocumentT;
}

export interface ProfileSourceDeps {
  cacheDir: string;
  /** `auto_tune_profiles_url`; null: nothing is fetched. */
  url(): string | null;
  offline(): boolean;
  clock: Clock;
  fetch?: typeof fetch;
  log: { info(message: string): void; warn(message: string): void };
}

/** The profile document in use: the cache when it holds a valid one for the configured URL, else
 * the bundled set. */
export class ProfileSource {
  private readonly path: string;
  private cached: CachedProfiles | null;

  constructor(private readonly deps: ProfileSourceDeps) {
    this.path = join(deps.cacheDir, "tuning_profiles.json");
    let raw: CachedProfiles | null = null;
    try {
      raw = readJsonFile<CachedProfiles | null>(this.path, null);
    } catch (err) {
      // Only a cache of what the URL serves: a broken one is fetched again, never a reason not to start.
      if (!(err instanceof CorruptStateFileError)) throw err;
      deps.log.warn(`${this.path} is not JSON; using the bundled profiles until the next fetch`);
    }
    this.cached = raw && typeof raw === "object" && documentProblem(raw.document) === null ? raw : null;
  }

  current(): { document: ProfileDocumentT; source: "bundled" | "cache"; ageMs?: number } {
    const url = this.deps.url();
    if (this.cached && url && this.cached.url === url) {
      return { document: this.cached.document, source: "cache", ageMs: this.deps.clock.now() - this.cached.fetched_at };
    }
    return { document: bundledProfiles(), source: "bundled" };
  }

  /** Fetches the document when a URL is set, the server is not offline and the cache is missing or
   * stale; a failed or invalid fetch keeps what there was (logged), never stops the server. */
  async refresh(force = false): Promise<void> {
    const url = this.deps.url();
    if (!url || this.deps.offline()) return;
    const now = this.deps.clock.now();
    if (!force && this.cached?.url === url && now - this.cached.fetched_at < PROFILE_MAX_AGE_MS) return;
    try {
      const res = await (this.deps.fetch ?? fetch)(url, { signal: AbortSignal.timeout(10_000) });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const doc: unknown = await res.json();
      const problem = documentProblem(doc);
      if (problem) throw new Error(`not a profile document (${problem})`);
      const document = doc as ProfileDocumentT;
      const changed = this.cached?.document.version !== document.version;
      this.cached = { url, fetched_at: now, document };
      writeJsonFileAtomic(this.path, this.cached);
      if (changed) this.deps.log.info(`Tuning profiles ${document.version} fetched from ${url}`);
    } catch (err) {
      this.deps.log.warn(`Could not fetch tuning profiles from ${url}: ${(err as Error).message}; using the ${this.cached ? "cached" : "bundled"} set`);
    }
  }
}

export interface LocalTune {
  archetype: string;
  /** `recipe:backend` the parameters were measured on. */
  backend: string;
  params: TuningParamsT;
  tokens_per_second?: number;
  tuned_at: number;
}

/** tuned_options.json: each model's overlay measured by `lemonade tune` on this machine. */
export class LocalTuneStore {
  private readonly path: string;
  private data: Record<string, LocalTune>;

  constructor(cacheDir: string) {
    this.path = join(cacheDir, "tuned_options.json");
    const raw = readJsonFile<Record<string, LocalTune>>(this.path, {});
    // Entries that are not valid parameters (a hand edit) are dropped rather than applied.
    this.data = Object.fromEntries(Object.entries(raw && typeof raw === "object" ? raw : {}).filter(([, t]) => t && Value.Check(TuningParams, t.params)));
  }

  /** The overlay for a model on this archetype and backend. */
  get(model: string, archetype: string, backend: string): LocalTune | undefined {
    const t = this.data[model];
    return t && t.archetype === archetype && t.backend === backend ? t : undefined;
  }

  any(model: string): LocalTune | undefined {
    return this.data[model];
  }

  set(model: string, tune: LocalTune | null): void {
    const next = { ...this.data };
    if (tune) next[model] = tune;
    else delete next[model];
    writeJsonFileAtomic(this.path, next);
    this.data = next;
  }
}

export interface AutoTuneDeps {
  enabled(): boolean;
  /** This machine's archetype (derived once: the hardware does not change under a server). */
  archetype(): Archetype;
  profiles: ProfileSource;
  local: LocalTuneStore;
  resolveBackend(recipe: string, asked: string): string;
  available(recipe: string, backend: string): boolean;
}

/** Auto-tune as a load sees it (models/recipe-options.ts TuningContext) and as the API reports it. */
export class AutoTune {
  constructor(private readonly deps: AutoTuneDeps) {}

  get profiles(): ProfileSource {
    return this.deps.profiles;
  }

  get local(): LocalTuneStore {
    return this.deps.local;
  }

  enabled(): boolean {
    return this.deps.enabled();
  }

  archetype(): Archetype {
    return this.deps.archetype();
  }

  profile(): ArchetypeProfileT | undefined {
    return profileFor(this.deps.profiles.current().document, this.deps.archetype());
  }

  /** The overlay `lemonade tune` saved for the model on this archetype and backend. */
  localFor(model: string, archetype: string, backend: string): LocalTune | undefined {
    return this.deps.local.get(model, archetype, backend);
  }

  resolveBackend(recipe: string, asked: string): string {
    return this.deps.resolveBackend(recipe, asked);
  }

  available(recipe: string, backend: string): boolean {
    return this.deps.available(recipe, backend);
  }
}
