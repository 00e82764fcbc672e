// Every endpoint definition, in the order the docs list them.
import type { EndpointDef } from "./endpoint.ts";
import * as lemonade from "./lemonade.ts";
import * as ollama from "./ollama.ts";
import * as models from "./models.ts";
import * as openai from "./openai.ts";
import * as images from "./images.ts";
import * as llamacpp from "./llamacpp.ts";
import * as anthropic from "./anthropic.ts";
import * as mcp from "./mcp.ts";
import * as cloud from "./cloud.ts";
import * as web from "./web.ts";

export const endpoints: EndpointDef[] = [
  openai.chatCompletions,
  openai.completions,
  openai.embeddings,
  openai.responses,
  openai.audioTranscriptions,
  images.generations,
  images.edits,
  images.variations,
  images.upscale,
  openai.audioSpeech,
  openai.realtime,
  anthropic.messages,
  anthropic.countTokens,
  models.list,
  models.get,
  models.files,
  models.optionsGet,
  models.optionsPost,
  models.optionsDelete,
  llamacpp.rerank,
  llamacpp.slots,
  llamacpp.slotAction,
  llamacpp.tokenize,
  ollama.chat,
  ollama.generate,
  ollama.tags,
  ollama.show,
  ollama.embed,
  ollama.embeddings,
  ollama.ps,
  ollama.pull,
  ollama.remove,
  ollama.version,
  ollama.create,
  ollama.copy,
  ollama.push,
  ollama.blobs,
  lemonade.load,
  lemonade.unload,
  lemonade.pull,
  lemonade.register,
  lemonade.pullVariants,
  lemonade.checkUpdates,
  lemonade.routingValidate,
  lemonade.classify,
  lemonade.registrySearch,
  lemonade.downloads,
  lemonade.downloadsControl,
  lemonade.deleteModel,
  lemonade.install,
  lemonade.uninstall,
  cloud.cloudAuth,
  cloud.cloudAuthClear,
  mcp.mcpPost,
  mcp.mcpGet,
  lemonade.health,
  lemonade.stats,
  lemonade.systemInfo,
  lemonade.systemStats,
  lemonade.metrics,
  lemonade.logsStream,
  lemonade.live,
  lemonade.openapi,
  lemonade.docs,
  web.docsAsset,
  web.webApp,
  web.webAsset,
  lemonade.aliasesList,
  lemonade.aliasesSet,
  lemonade.aliasesDelete,
  lemonade.internalConfig,
  lemonade.internalSet,
  lemonade.internalPin,
  lemonade.internalShutdown,
];

export * from "./endpoint.ts";
export * from "./errors.ts";
export { lemonade, ollama, models, openai, images, llamacpp, anthropic, mcp, cloud, web };
