// Every endpoint definition, in the order the docs list them.
import type { EndpointDef } from "./endpoint.ts";
import * as lemonade from "./lemonade.ts";
import * as ollama from "./ollama.ts";

export const endpoints: EndpointDef[] = [
  ollama.version,
  ollama.create,
  ollama.copy,
  ollama.push,
  ollama.blobs,
  lemonade.health,
  lemonade.systemInfo,
  lemonade.systemStats,
  lemonade.metrics,
  lemonade.logsStream,
  lemonade.live,
  lemonade.aliasesList,
  lemonade.aliasesSet,
  lemonade.aliasesDelete,
];

export * from "./endpoint.ts";
export * from "./errors.ts";
export { lemonade, ollama };
