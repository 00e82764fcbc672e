// What a model resolves to: one Target per kind of model, each with its own load and forward: a
// local engine (the scheduler's lease, then the transport), a cloud upstream (its provider, never
// loaded), a collection.router (protocols/routing.ts: pick a candidate, then its target), a
// collection.omni (protocols/omni.ts: the server-side tool loop over its components). The proxy
// resolves a request's model to its target once; the kinds beyond the two defined here are added
// where their logic lives (app/context.ts), so neither the proxy nor a route asks a model's kind.
import type { Clock } from "../lib/clock.ts";
import type { CatalogModel } from "../models/catalog.ts";
import type { ProxyRequest } from "./request.ts";
import type { Scheduler } from "./scheduler.ts";

export interface LoadRequest {
  /** What the answer's message calls the model: the name the load request gave, as Lemonade names it. */
  name: string;
  /** Recipe options the load request carries. */
  options?: Record<string, unknown>;
  pinned?: boolean;
}

/** What a load did, as POST /v1/load reports it. */
export interface Loaded {
  message: string;
  /** The checkpoint the answer names; absent: the model's own. */
  checkpoint?: string;
  /** Whether the request's options took effect (only then may they be saved as the model's). */
  tookOptions: boolean;
}

export interface Target {
  /** The API its requests are written in: an Anthropic-API provider takes Messages requests as
   * clients send them; everything else takes OpenAI-shaped ones. */
  readonly speaks: "openai" | "anthropic";
  /** Makes the model ready to serve. */
  load(req: LoadRequest): Promise<Loaded>;
  /** Sends one request to it; the request's check applies to whatever model finally serves it. */
  forward(req: ProxyRequest): Promise<Response>;
}

/** One kind of model: which models are of it, and the target for one. */
export interface TargetKind {
  claims(model: CatalogModel): boolean;
  target(model: CatalogModel): Target;
}

/** Every kind of model, and the one a model falls to when no other claims it (a local engine). */
export class Targets {
  private readonly kinds: TargetKind[];

  constructor(
    private readonly fallback: TargetKind,
    kinds: TargetKind[] = [],
  ) {
    this.kinds = [...kinds];
  }

  add(kind: TargetKind): void {
    this.kinds.push(kind);
  }

  of(model: CatalogModel): Target {
    return (this.kinds.find((k) => k.claims(model)) ?? this.fallback).target(model);
  }
}

/** How the proxy sends a request to a model on this side: to its engine, or to its provider. */
export interface Forwarding {
  toEngine(model: CatalogModel, req: ProxyRequest): Promise<Response>;
  toCloud(model: CatalogModel, req: ProxyRequest): Promise<Response>;
}

/** A model a local engine serves: loaded by the scheduler, its requests through the transport. */
export function engineKind(scheduler: Scheduler<CatalogModel>, forwarding: Forwarding): TargetKind {
  return {
    claims: () => true,
    target: (model) => ({
      speaks: "openai",
      async load({ name, options, pinned }) {
        await scheduler.load(model, { options, pinned });
        return { message: `Loaded model: ${name}`, tookOptions: true };
      },
      forward: (req) => forwarding.toEngine(model, req),
    }),
  };
}

/** The cloud models loaded (by `/v1/load`, or by a request naming one), with when. */
export type CloudLoaded = Map<string, { model: CatalogModel; loadedAt: number }>;

/** A model a cloud provider serves: there is nothing to load, and its requests go to the provider.
 * A load is remembered in `loaded`, so that the model keeps answering by its name (with the
 * provider's missing-credentials error once its key is cleared) after the catalog drops it. */
export function cloudKind(forwarding: Forwarding, loaded: CloudLoaded, clock: Clock): TargetKind {
  return {
    claims: (model) => model.cloud !== undefined,
    target: (model) => ({
      speaks: model.cloud!.wire,
      load: async ({ name }) => {
        loaded.set(model.id, { model, loadedAt: clock.now() });
        return {
          message: `${name} is served by the ${model.cloud!.provider} cloud provider; nothing to load`,
          checkpoint: model.cloud!.upstreamId,
          tookOptions: false,
        };
      },
      forward: (req) => forwarding.toCloud(model, req),
    }),
  };
}
