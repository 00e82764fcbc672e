// The memory a load may use: LEMONADE_MEMORY_LIMIT_GB less what loaded models take, or what the
// system has available now. It sizes `ctx_size: -1` and admits loads (runtime/scheduler.ts).
import { statSync } from "node:fs";
import type { Config } from "../config/config.ts";
import { availableMemoryBytes } from "../lib/devices.ts";
import type { Catalog, CatalogModel } from "../models/catalog.ts";
import { autoCtxSize, footprintBytes, shapeFromGguf, type ModelShape } from "../models/memory-fit.ts";
import type { LoadSpec } from "../models/recipe-options.ts";
import type { Instance } from "../runtime/scheduler.ts";
import { RECIPE_SPECS } from "../spec/recipes.ts";

/** The workers' free memory a model's `rpc` option would use, or null while one of them is not
 * yet checked (the load's own health check decides then). */
export type WorkerMemory = (rpc: string) => number | null;

export function memoryPlanner(config: Config, catalog: Catalog, loaded: () => Instance<CatalogModel>[], workerMemory: WorkerMemory = () => 0) {
  /** The shape of a model whose recipe declares a `gguf` memory estimate, from its GGUF once its
   * file is there; other recipes' loads are admitted by count alone. */
  const shapeOf = (model: CatalogModel): ModelShape | undefined => {
    if (RECIPE_SPECS[model.recipe]?.memory !== "gguf") return undefined;
    const main = catalog.files(model).find((f) => f.role === "main");
    if (!main?.path || !main.path.toLowerCase().endsWith(".gguf")) return undefined;
    const meta = catalog.metadata(main.path);
    if (!meta) return undefined;
    const weights = catalog.files(model).reduce((n, f) => n + (f.path ? statSync(f.path).size : 0), 0);
    return shapeFromGguf(meta, weights, model.type === "embedding" || model.type === "reranking");
  };
  const free = (except: string): number => {
    if (config.memoryLimitBytes === null) return availableMemoryBytes();
    let used = 0;
    for (const instance of loaded()) {
      if (instance.model.id === except) continue;
      // A model split across workers holds here only the weights it did not send them.
      const split = instance.engine.detail?.() as { local_weights_mib?: number | null } | undefined;
      const shape = shapeOf(instance.model);
      if (typeof split?.local_weights_mib === "number") used += split.local_weights_mib * 2 ** 20;
      else if (shape) used += footprintBytes(shape, instance.spec.ctxSize);
    }
    return config.memoryLimitBytes - used;
  };
  return {
    autoCtx(model: CatalogModel): number | undefined {
      const shape = shapeOf(model);
      return shape ? autoCtxSize(shape, free(model.id)) : undefined;
    },
    memory(model: CatalogModel, spec: LoadSpec): { need: number; free: number } | undefined {
      const shape = shapeOf(model);
      if (!shape) return undefined;
      // A model split across workers fits in this machine's memory and theirs together.
      const rpc = String(spec.options.rpc ?? "");
      const workers = rpc ? workerMemory(rpc) : 0;
      return workers === null ? undefined : { need: footprintBytes(shape, spec.ctxSize), free: free(model.id) + workers };
    },
  };
}
