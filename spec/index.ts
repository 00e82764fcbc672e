// Every endpoint definition, built from the spec modules' exports: the modules in the order the
// docs list them, each module's definitions in the order it declares them.
import { definitionsOf, type EndpointDef } from "./endpoint.ts";
import * as openai from "./openai.ts";
import * as images from "./images.ts";
import * as anthropic from "./anthropic.ts";
import * as models from "./models.ts";
import * as llamacpp from "./llamacpp.ts";
import * as ollama from "./ollama.ts";
import * as lifecycle from "./lifecycle.ts";
import * as downloads from "./downloads.ts";
import * as classify from "./classify.ts";
import * as generation from "./generation.ts";
import * as backends from "./backends.ts";
import * as cloud from "./cloud.ts";
import * as mcp from "./mcp.ts";
import * as operations from "./operations.ts";
import * as web from "./web.ts";
import * as internal from "./internal.ts";
import * as jobs from "./jobs.ts";
import * as tuning from "./tuning.ts";

const modules = [openai, images, anthropic, models, llamacpp, ollama, lifecycle, downloads, classify, generation, backends, cloud, mcp, operations, tuning, jobs, web, internal];

export const endpoints: EndpointDef[] = modules.flatMap(definitionsOf);

export * from "./endpoint.ts";
export * from "./errors.ts";
export { openai, images, anthropic, models, llamacpp, ollama, lifecycle, downloads, classify, generation, backends, cloud, mcp, operations, tuning, jobs, web, internal };
