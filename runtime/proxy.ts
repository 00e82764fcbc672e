// Where chat (and every other engine request) is proxied: the model a request names is looked up
// and resolved to its target (runtime/targets.ts); a local engine's model is claimed from the
// scheduler, a cloud model's provider reached instead (a pool's member chosen by runtime/pool.ts),
// and the request goes as one Exchange
// (runtime/exchange.ts): sent by the transport
// (runtime/transport.ts: queue, replay, hang watchdog, deadline), streamed by the pump
// (runtime/stream-pump.ts: translation, framing, keep-alives, the one error event), recorded at
// its end (runtime/accounting.ts).
import { E } from "../spec/errors.ts";
import { ApiError } from "../lib/api-error.ts";
import { systemClock, type Clock } from "../lib/clock.ts";
import { minimumTokens, promptBytes } from "../models/prompt-bound.ts";
import type { Catalog, CatalogModel } from "../models/catalog.ts";
import type { Logger } from "../observability/logger.ts";
import type { Metrics } from "../observability/metrics.ts";
import type { GenerationStats } from "../observability/stats.ts";
import { EngineQueue, type Ticket } from "./engine-queue.ts";
import type { Lease, Scheduler, Instance } from "./scheduler.ts";
import { noKey, type CloudProviders } from "../models/cloud.ts";
import { upstreamUrl } from "../engines/cloud.ts";
import { CloudLeases } from "./cloud-lease.ts";
import { Pools, type MemberClaim } from "./pool.ts";
import { Exchange, type ExchangeDeps, type ExchangeRequest } from "./exchange.ts";
import type { ModelCheck, ProxyRequest, RecentRequest } from "./request.ts";
import type { StreamRule } from "./stream-pump.ts";
import { cloudKind, engineKind, Targets, type CloudLoaded, type Forwarding, type Target } from "./targets.ts";
import type { Route } from "./transport.ts";
import type { EngineCall, Generated } from "../engines/engine.ts";
import type { Capability } from "../spec/recipes.ts";
import { isJson, type Json } from "../lib/json.ts";
import { forRequestedModel } from "./model-error.ts";

export interface ProxyDeps {
  scheduler: Scheduler<CatalogModel>;
  catalog: Catalog;
  metrics: Metrics;
  stats: GenerationStats;
  logger: Logger;
  /** Silence (ms) after which a waiting request checks its engine's health; after three failed
   * checks in a row the engine counts as hung. 0 turns the check off. */
  hangCheckMs?: number;
  /** Silence (ms) in a stream after which a keep-alive is written. */
  pingMs?: number;
  /** Time and timers (tests pass a fake one). */
  clock?: Clock;
  /** The HTTP client engines are reached with (tests pass an in-process engine). */
  fetch?: typeof fetch;
  /** Requests that may wait for one engine's slots; more are refused with 503. Read at each request. */
  maxQueue?: () => number;
  /** Cloud providers: their models are forwarded to the provider, never loaded. */
  cloud?: CloudProviders;
  /** config.json `global_timeout`: the most seconds a cloud request may take. */
  cloudTimeoutS?: () => number;
  /** The context a local model runs with (or a load with these options would), for recipes that
   * take one: a prompt that cannot fit it is refused before the engine sees it. */
  contextSize?: (model: CatalogModel, loadOptions?: Record<string, unknown>) => number | undefined;
  /** Runs on a claimed local engine before the request goes to it (a saved KV cache restored). */
  beforeSend?: (lease: Lease<CatalogModel>, req: ProxyRequest) => Promise<void>;
  /** The recipe's own engine conversation for a capability (3D and audio generation). */
  engineCall?: (recipe: string, capability: Capability) => EngineCall | undefined;
}

/** One generation on a local engine, in its recipe's own API (`EngineProxy.generate`). */
export interface GenerateRequest {
  model: string;
  capability: Capability;
  /** The client's body, checked by the route. */
  body: Json;
  check: ModelCheck;
  signal: AbortSignal;
}

/** How long a pool's down member has to answer its probe (a hang check gives its own interval). */
const PROBE_TIMEOUT_MS = 5000;
/** The answers that say a pool's member is not serving (it, or what stands in front of it); a 500
 * is the request's own failure (llama-server's answer to one it cannot process), so it goes to the
 * client rather than taking each member down in turn. */
const UNAVAILABLE = new Set([502, 503, 504]);

/** A chunk a provider sends only because its usage was asked for: usage, and no choices. */
function usageOnly(data: string): boolean {
  try {
    const chunk = JSON.parse(data);
    return isJson(chunk) && chunk.usage != null && (!("choices" in chunk) || (Array.isArray(chunk.choices) && chunk.choices.length === 0));
  } catch {
    return false;
  }
}

/** A provider's chat or completion stream, as Lemonade sends it: with `stream_options.include_usage`
 * asked for, so the request's tokens are counted (from the provider's own chunks), and the
 * usage-only chunk that adds kept from a client that did not ask for it. */
function countedStream(req: ProxyRequest, wire: string): { body: ProxyRequest["body"]; stream: StreamRule | undefined } {
  const { body, stream } = req;
  const options = isJson(body.stream_options) ? body.stream_options : {};
  const passthrough = stream && !stream.translate;
  if (!passthrough || wire !== "openai" || !["/v1/chat/completions", "/v1/completions"].includes(req.path) || options.include_usage === true) {
    return { body, stream };
  }
  const rule: StreamRule = {
    framer: stream.framer,
    translate: () => {
      let done = false;
      return {
        event(data) {
          if (data.trim() === "[DONE]") done = true;
          else if (usageOnly(data)) return "";
          return `data: ${data}\n\n`;
        },
        // Whole once the provider said [DONE]; else it stopped short.
        end: () => (done ? "" : null),
      };
    },
  };
  return { body: { ...body, stream_options: { ...options, include_usage: true } }, stream: rule };
}

export class EngineProxy implements Forwarding {
  private readonly queues = new WeakMap<Instance<CatalogModel>, EngineQueue>();
  private readonly cloudLeases: CloudLeases;
  /** Cloud models loaded by name (`/v1/load`, or a request naming one, as Lemonade loads it): they
   * answer until unloaded, whatever the catalog lists. */
  private readonly cloudLoaded: CloudLoaded = new Map();
  private readonly exchangeDeps: ExchangeDeps;
  /** The cloud providers that are pools: their members' states (reported by /v1/health). */
  readonly pools: Pools;
  /** Every kind of model a request may name; collections add theirs (app/context.ts). */
  readonly targets: Targets;
  /** Each model's longest token, read from its GGUF once (the catalog makes a new object when a
   * model changes). */
  private readonly longestTokens = new WeakMap<CatalogModel, number | undefined>();

  constructor(private readonly deps: ProxyDeps) {
    this.exchangeDeps = {
      logger: deps.logger,
      metrics: deps.metrics,
      stats: deps.stats,
      clock: deps.clock ?? systemClock,
      fetch: deps.fetch ?? fetch,
      hangCheckMs: deps.hangCheckMs ?? 10_000,
      pingMs: deps.pingMs ?? 1000,
      name: (model) => deps.catalog.publicId(model),
    };
    this.cloudLeases = new CloudLeases(this.exchangeDeps.clock);
    this.targets = new Targets(engineKind(deps.scheduler, this), [cloudKind(this, this.cloudLoaded, this.exchangeDeps.clock)]);
    const send = this.exchangeDeps.fetch;
    this.pools = new Pools({
      clock: this.exchangeDeps.clock,
      log: { info: (m) => deps.logger.info("Proxy", m), warn: (m) => deps.logger.warn("Proxy", m) },
      members: (provider) => deps.cloud?.members(provider),
      async probe(provider, url, timeoutMs = PROBE_TIMEOUT_MS) {
        const server = deps.cloud?.target(provider).servers.find((s) => s.baseUrl === url);
        let res: Response;
        try {
          res = await send(`${url}/models`, { headers: server?.headers ?? {}, signal: AbortSignal.timeout(timeoutMs) });
        } catch (err) {
          throw new Error(`could not be reached (${(err as Error).message})`);
        }
        await res.body?.cancel().catch(() => {});
        if (res.status >= 500) throw new Error(`answered HTTP ${res.status}`);
      },
    });
  }

  /** The queue in front of a loaded model's engine. */
  queueOf(instance: Instance<CatalogModel>): EngineQueue {
    let queue = this.queues.get(instance);
    if (!queue) {
      queue = new EngineQueue(instance.engine.slots, this.deps.maxQueue ?? (() => 512), () => this.exchangeDeps.name(instance.model));
      this.queues.set(instance, queue);
    }
    return queue;
  }

  /** Requests waiting for a loaded model's engine. */
  queued(instance: Instance<CatalogModel>): number {
    return this.queues.get(instance)?.depth ?? 0;
  }

  /** A loaded model's engine slots serving a request now. */
  slotsInUse(instance: Instance<CatalogModel>): number {
    return this.queues.get(instance)?.inUse ?? 0;
  }

  /** The model a request names: a loaded one by its id without a catalog scan (every request's
   * hot path), else the catalog's answer; refused when the route cannot serve it. A built-in's id
   * is its bare name, which a registered or imported model of that name outranks: then the
   * catalog's answer. */
  model(name: string, check: ModelCheck): CatalogModel {
    const model = this.lookup(name);
    const refusal = check(model, this.exchangeDeps.name);
    if (refusal) throw refusal;
    return model;
  }

  private lookup(name: string): CatalogModel {
    const loaded = this.deps.scheduler.ready(name);
    if (loaded && !this.deps.catalog.isShadowedBuiltIn(loaded.id)) return loaded;
    return this.cloudLoaded.get(name)?.model ?? this.deps.catalog.get(name);
  }

  /** The loaded cloud models, with their last use and what they serve now (for /v1/health). */
  loadedCloud(): { model: CatalogModel; lastUse: number; inflight: number; streaming: number }[] {
    return [...this.cloudLoaded.values()].map(({ model, loadedAt }) => {
      const instances = this.cloudLeases.of(model.id);
      return {
        model,
        lastUse: Math.max(loadedAt, ...instances.map((i) => i.lastUse)),
        inflight: instances.reduce((n, i) => n + i.inflight, 0),
        streaming: instances.reduce((n, i) => n + i.streaming, 0),
      };
    });
  }

  /** Forgets a loaded cloud model (every one without a name); whether one was loaded. */
  unloadCloud(id?: string): boolean {
    if (id !== undefined) return this.cloudLoaded.delete(id);
    const any = this.cloudLoaded.size > 0;
    this.cloudLoaded.clear();
    return any;
  }

  /** Claims the model a request names (loading it when needed). */
  acquire(name: string, check: ModelCheck, opts: { options?: Record<string, unknown>; signal?: AbortSignal } = {}): Promise<Lease<CatalogModel>> {
    return this.claim(this.model(name, check), name, opts);
  }

  /** Claims `model` (loading it when needed) for a request that named it `requested`: a failed
   * load is answered for that name. */
  private claim(model: CatalogModel, requested: string, opts: Parameters<Scheduler<CatalogModel>["acquire"]>[1]): Promise<Lease<CatalogModel>> {
    return this.deps.scheduler.acquire(model, opts).catch((err) => {
      throw forRequestedModel(err, requested);
    });
  }

  /** The target a model name resolves to. */
  target(name: string): Target {
    return this.targets.of(this.lookup(name));
  }

  /** Sends a request to the model it names, through that model's target; a refusal or a failed
   * load before the exchange fails the request's span. */
  async toModel(req: ProxyRequest): Promise<Response> {
    try {
      return await this.target(req.model).forward(req);
    } catch (err) {
      req.span?.fail((err as Error).message);
      throw err;
    }
  }

  /** A generation the recipe converses for itself (engines/<recipe>.ts `generate`): the model
   * claimed (loaded when needed) and one of its engine's slots held for the whole conversation,
   * which may be several requests (a job submitted, polled, fetched). */
  async generate(req: GenerateRequest): Promise<Generated> {
    const model = this.model(req.model, req.check);
    const call = this.deps.engineCall?.(model.recipe, req.capability);
    if (!call) throw new Error(`Recipe ${model.recipe} has no engine call for ${req.capability}`);
    const lease = await this.claim(model, req.model, { signal: req.signal });
    let ticket: Ticket | undefined;
    try {
      ticket = this.queueOf(lease.instance).join(req.signal);
      await ticket.ready;
      return await call(lease.url, req.body, req.signal);
    } catch (err) {
      if (err instanceof ApiError) throw err;
      if (req.signal.aborted) throw ApiError.of(E.clientClosed, "The client closed the request");
      // The engine did not answer: it is stopped and forgotten, so the next request starts it again.
      await lease.fail();
      throw ApiError.of(E.backendStopped, `${this.exchangeDeps.name(model)}'s engine stopped answering: ${(err as Error).message}`);
    } finally {
      ticket?.leave();
      lease.release();
    }
  }

  /** To a local engine: the model claimed (loaded when needed), then one exchange with its engine. */
  async toEngine(model: CatalogModel, req: ProxyRequest): Promise<Response> {
    const refusal = req.check(model, this.exchangeDeps.name);
    if (refusal) throw refusal;
    this.checkFits(model, req);
    const opts = { options: req.loadOptions, signal: req.signal, residency: req.helper ? ("routing_helper" as const) : ("standard" as const) };
    const lease = await this.claim(model, req.model, opts);
    if (this.deps.beforeSend) {
      try {
        await this.deps.beforeSend(lease, req);
      } catch (err) {
        lease.release();
        throw err;
      }
    }
    return this.forward(lease, { ...req, method: "POST" }, this.localRoute(model, opts, true), req);
  }

  /** Refuses a prompt longer than the context in any tokenisation (models/prompt-bound.ts). */
  private checkFits(model: CatalogModel, req: ProxyRequest): void {
    const context = this.deps.contextSize?.(model, req.loadOptions);
    if (!context) return;
    if (!this.longestTokens.has(model)) this.longestTokens.set(model, this.deps.catalog.longestTokenBytes(model));
    const longest = this.longestTokens.get(model);
    if (!longest) return;
    const bytes = promptBytes(req.body);
    const tokens = minimumTokens(bytes, longest);
    if (tokens > context) {
      throw ApiError.of(E.contextLengthExceeded, `The prompt is at least ${tokens} tokens (${bytes} bytes; no token of ${this.exchangeDeps.name(model)} is longer than ${longest}), more than its context of ${context}`);
    }
  }

  /** A cloud model's request goes to its provider, the model named by the provider's own id; a
   * pool's goes to the member it chooses, and on to the next while members fail before answering. */
  async toCloud(model: CatalogModel, req: ProxyRequest): Promise<Response> {
    const refusal = req.check(model, this.exchangeDeps.name);
    if (refusal) throw refusal;
    const { cloud, cloudTimeoutS } = this.deps;
    if (!cloud) throw ApiError.of(E.modelNotFound, `Model not found: ${model.id}`);
    const provider = model.cloud!.provider;
    // Lemonade refuses a stream for want of a key inside the stream: a 200, then the one error event.
    if (req.stream && !req.holdHeaders && cloud.lacksKey(provider)) {
      const err = noKey(provider, true);
      req.span?.fail(err.message);
      return new Response(req.stream.framer.error(err), { status: 200, headers: req.stream.framer.headers });
    }
    const { servers, wire } = cloud.target(provider);
    const messages = req.path.startsWith("/v1/messages");
    if ((wire === "anthropic") !== messages) {
      throw ApiError.of(E.cloudWireMismatch, wire === "anthropic"
        ? `Model ${model.id} is served by an Anthropic-API provider: use POST /v1/messages`
        : `Model ${model.id}'s provider speaks the OpenAI API, which counts no tokens for /v1/messages`, "model");
    }
    // Lemonade passes only streams on to a provider's Responses API.
    if (req.path === "/v1/responses" && !req.stream) {
      throw ApiError.of(E.noResponsesApi, `Model ${model.id} is a cloud model, which has no Responses API: use /v1/chat/completions, or stream`, "model");
    }
    if (!this.cloudLoaded.has(model.id)) this.cloudLoaded.set(model.id, { model, loadedAt: this.exchangeDeps.clock.now() });
    const baseUrl = servers[0]!.baseUrl;
    const headers = new Map(servers.map((s) => [s.baseUrl, s.headers]));
    const pool = this.pools.of(provider);
    // Each member at most once per request: one that failed it is down, and the next is asked.
    const tried = new Set<string>();
    const claim = () => {
      let member: MemberClaim | undefined;
      if (pool) {
        member = pool.pick(tried);
        if (!member) throw pool.unavailable(model.id);
        tried.add(member.url);
      }
      return this.cloudLeases.lease(model, baseUrl, member);
    };
    const route: Route = {
      url: (l, path) => upstreamUrl(l.url, path),
      headers: (l) => headers.get(l.url) ?? {},
      // A pool's member that failed before answering served nothing, so another may; a lone
      // provider's request is never sent twice.
      replay: pool ? { claim: async () => claim(), times: servers.length, how: "sending the request to the pool's next member", failsOver: (status) => UNAVAILABLE.has(status) } : null,
      timeoutMs: (cloudTimeoutS?.() ?? 600) * 1000,
      join: (l, signal) => this.queueOf(l.instance).join(signal),
    };
    const counted = countedStream(req, wire);
    return this.forward(claim(), { ...req, method: "POST", body: { ...counted.body, model: model.cloud!.upstreamId } }, route, { ...req, stream: counted.stream });
  }

  private localRoute(model: CatalogModel, opts: { options?: Record<string, unknown>; signal?: AbortSignal }, queued: boolean): Route {
    return {
      url: (lease, path) => lease.url + path,
      headers: () => ({}),
      replay: { claim: () => this.deps.scheduler.acquire(model, opts), times: 1, how: "loading it again to send the request once more" },
      join: queued ? (lease, signal) => this.queueOf(lease.instance).join(signal) : null,
    };
  }

  /** Forwards to the most recently used model (slots, tokenize: they name no model). */
  async toRecent(req: RecentRequest): Promise<Response> {
    const { scheduler } = this.deps;
    const id = scheduler.mostRecent;
    if (!id) throw ApiError.of(E.noModelLoaded, "No model is loaded: load a llama.cpp model first");
    const model = scheduler.list().find((s) => s.model.id === id)?.model;
    if (!model) throw ApiError.of(E.unloadedWhileWaiting, `Model ${this.deps.catalog.publicIdOf(id)} was unloaded while the request waited for it`);
    const refusal = req.check(model, this.exchangeDeps.name);
    if (refusal) throw refusal;
    const opts = { signal: req.signal };
    const lease = await scheduler.acquire(model, opts);
    return this.forward(lease, { ...req, model: id, body: req.body ?? {}, generation: false }, this.localRoute(model, opts, false), {});
  }

  /** One exchange on a claimed model: a whole answer, or a stream through the pump. */
  private forward(lease: Lease<CatalogModel>, req: ExchangeRequest, route: Route, how: { stream?: StreamRule; holdHeaders?: boolean }): Promise<Response> {
    let ex: Exchange;
    try {
      ex = new Exchange(this.exchangeDeps, lease, req, route);
    } catch (err) {
      lease.release();
      throw err;
    }
    return how.stream ? ex.stream(how.stream, how.holdHeaders === true) : ex.unary();
  }
}
