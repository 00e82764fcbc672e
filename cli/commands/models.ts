// Model commands: list, pull, delete, load, unload, export, import, check-updates.
import { readFileSync, writeFileSync } from "node:fs";
import { Client, CliError, ensureServer, errorMessage, target } from "../client.ts";
import { SERVER_FLAGS, SERVER_FLAGS_HELP, type Command, type CommandInput } from "../command.ts";
import { ProgressReporter, dim, green, sseEvents, table } from "../format.ts";

const connect = async (input: CommandInput) => {
  const client = new Client(target(input.values as { host?: string; port?: string }));
  await ensureServer(client);
  return client;
};

function oneModel(input: CommandInput, usage: string): string {
  const [model, ...extra] = input.positionals;
  if (!model || extra.length) throw new CliError(`usage: lemonade ${usage}`, 2);
  return model;
}

export const list: Command = {
  name: "list",
  summary: "List models with their downloaded and loaded state",
  usage: "list [--all] [--json]",
  help: `Lists downloaded models (all catalog models with --all), marking those loaded.
  --all         Include catalog models that are not downloaded
  --json        Print JSON for scripts
${SERVER_FLAGS_HELP}`,
  options: { ...SERVER_FLAGS, all: { type: "boolean" }, json: { type: "boolean" } },
  async run(input) {
    const client = await connect(input);
    const models = (await client.json("GET", `/v1/models?show_all=${input.values.all ? "true" : "false"}`)).data as any[];
    const loaded = new Set(((await client.json("GET", "/v1/health")).all_models_loaded as any[]).map((m) => m.model_name));
    if (input.values.json) {
      console.log(JSON.stringify(models.map((m) => ({ ...m, loaded: loaded.has(m.id) })), null, 2));
      return 0;
    }
    if (!models.length) {
      console.log(`No models downloaded. See the catalog with: lemonade list --all; then: lemonade pull <model>`);
      return 0;
    }
    const rows = models.map((m) => [
      m.id,
      m.downloaded ? green("yes") : dim("no"),
      loaded.has(m.id) ? green("loaded") : "",
      m.recipe,
      m.size !== undefined ? `${m.size} GB` : "",
      m.labels.join(","),
    ]);
    console.log(table(["MODEL", "DOWNLOADED", "STATE", "RECIPE", "SIZE", "LABELS"], rows));
    return 0;
  },
};

/** Streams a /v1/pull, drawing progress; returns when the model is installed. */
export async function pullWithProgress(client: Client, body: Record<string, unknown>): Promise<void> {
  const res = await client.request("POST", "/v1/pull", { ...body, stream: true });
  if (!res.ok || !res.headers.get("content-type")?.includes("text/event-stream")) {
    const parsed: any = await res.json().catch(() => ({}));
    throw new CliError(errorMessage(parsed, `pull failed: HTTP ${res.status}`));
  }
  const progress = new ProgressReporter();
  let file = "";
  for await (const { event, data } of sseEvents(res.body!)) {
    if (event === "progress") {
      if (file && data.file !== file) progress.next();
      file = data.file;
      progress.update(`[${data.file_index}/${data.total_files}] ${data.file}`, data.bytes_downloaded, data.bytes_total);
    } else if (event === "error") {
      if (file) progress.next();
      throw new CliError(`pull failed: ${data.error}`);
    }
  }
  if (file) progress.next();
}

export const pull: Command = {
  name: "pull",
  summary: "Download a model (registering it first with --checkpoint)",
  usage: "pull <model> [--checkpoint ORG/NAME:VARIANT --recipe RECIPE [--mmproj FILE] [--label L]...]",
  help: `Downloads a catalog model into the Hugging Face cache, showing progress. With --checkpoint,
registers a user.* model first.
  --checkpoint C   Hugging Face checkpoint for a new user.* model
  --recipe R       Recipe for a new model (default llamacpp)
  --mmproj F       Multimodal projector file in the checkpoint's repo
  --label L        Label for a new model (repeatable)
${SERVER_FLAGS_HELP}`,
  options: {
    ...SERVER_FLAGS,
    checkpoint: { type: "string" },
    recipe: { type: "string" },
    mmproj: { type: "string" },
    label: { type: "string", multiple: true },
  },
  async run(input) {
    const model = oneModel(input, this.usage);
    const v = input.values;
    const body: Record<string, unknown> = { model_name: model };
    if (v.checkpoint) Object.assign(body, { checkpoint: v.checkpoint, recipe: v.recipe ?? "llamacpp" });
    if (v.mmproj) body.mmproj = v.mmproj;
    if (v.label) body.labels = v.label;
    await pullWithProgress(await connect(input), body);
    console.log(`Installed ${model}. Load it with: lemonade load ${model}`);
    return 0;
  },
};

export const del: Command = {
  name: "delete",
  summary: "Delete a downloaded model's files",
  usage: "delete <model>",
  help: `Unloads the model if loaded and deletes its files.\n${SERVER_FLAGS_HELP}`,
  options: SERVER_FLAGS,
  async run(input) {
    const model = oneModel(input, this.usage);
    console.log((await (await connect(input)).json("POST", "/v1/delete", { model_name: model })).message);
    return 0;
  },
};

export const load: Command = {
  name: "load",
  summary: "Load a model into memory",
  usage: "load <model> [--ctx-size N] [--pinned] [--llamacpp-args ARGS]",
  help: `Loads a model now (downloading it first if needed).
  --ctx-size N        Context size for this load
  --pinned            Pin the model against eviction
  --llamacpp-args A   Extra llama-server arguments
  --save              Save these options for the model
${SERVER_FLAGS_HELP}`,
  options: {
    ...SERVER_FLAGS,
    "ctx-size": { type: "string" },
    pinned: { type: "boolean" },
    "llamacpp-args": { type: "string" },
    save: { type: "boolean" },
  },
  async run(input) {
    const model = oneModel(input, this.usage);
    const v = input.values;
    const body: Record<string, unknown> = { model_name: model };
    if (v["ctx-size"] !== undefined) {
      const n = Number(v["ctx-size"]);
      if (!Number.isInteger(n)) throw new CliError(`--ctx-size must be a whole number, got ${v["ctx-size"]}`, 2);
      body.ctx_size = n;
    }
    if (v.pinned) body.pinned = true;
    if (v["llamacpp-args"] !== undefined) body.llamacpp_args = v["llamacpp-args"];
    if (v.save) body.save_options = true;
    console.log((await (await connect(input)).json("POST", "/v1/load", body)).message);
    return 0;
  },
};

export const unload: Command = {
  name: "unload",
  summary: "Unload one model, or all with --all",
  usage: "unload <model> | unload --all",
  help: `Stops a model's engine once its requests finish.\n  --all   Unload every model\n${SERVER_FLAGS_HELP}`,
  options: { ...SERVER_FLAGS, all: { type: "boolean" } },
  async run(input) {
    const client = new Client(target(input.values as { host?: string; port?: string }));
    if (!(await client.isUp())) throw new CliError(`No Lemonade server answers at ${client.base}; nothing is loaded`);
    if (input.values.all) {
      if (input.positionals.length) throw new CliError(`usage: lemonade ${this.usage}`, 2);
      console.log((await client.json("POST", "/v1/unload", {})).message);
      return 0;
    }
    const model = oneModel(input, this.usage);
    console.log((await client.json("POST", "/v1/unload", { model_name: model })).message);
    return 0;
  },
};

/** The /v1/pull body that re-creates a model elsewhere. */
function exportBody(m: any): Record<string, unknown> {
  const body: Record<string, unknown> = { model_name: m.id, recipe: m.recipe, checkpoints: m.checkpoints, labels: m.labels };
  if (m.size !== undefined) body.size = m.size;
  if (m.recipe_options && Object.keys(m.recipe_options).length) body.recipe_options = m.recipe_options;
  return body;
}

export const exportModel: Command = {
  name: "export",
  summary: "Write a model's definition as a /v1/pull body",
  usage: "export <model> [-o FILE]",
  help: `Prints (or writes) an import-ready definition of the model.\n  -o, --output FILE   Write to FILE instead of standard output\n${SERVER_FLAGS_HELP}`,
  options: { ...SERVER_FLAGS, output: { type: "string", short: "o" } },
  async run(input) {
    const model = oneModel(input, this.usage);
    const m = await (await connect(input)).json("GET", `/v1/models/${encodeURIComponent(model)}`);
    const text = JSON.stringify(exportBody(m), null, 2) + "\n";
    if (input.values.output) writeFileSync(String(input.values.output), text);
    else process.stdout.write(text);
    return 0;
  },
};

export const importModel: Command = {
  name: "import",
  summary: "Register and download a model from an exported file",
  usage: "import <file>",
  help: `Posts an exported definition to /v1/pull. A model name outside the user. namespace is imported
as user.<name>.\n${SERVER_FLAGS_HELP}`,
  options: SERVER_FLAGS,
  async run(input) {
    const file = oneModel(input, this.usage);
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(readFileSync(file, "utf8"));
    } catch (err) {
      throw new CliError(`${file} is not a readable JSON model definition: ${(err as Error).message}`);
    }
    const name = String(body.model_name ?? "");
    if (!name) throw new CliError(`${file} has no model_name`);
    if (!name.startsWith("user.")) body.model_name = `user.${name.replace(/^(extra\.)/, "")}`;
    await pullWithProgress(await connect(input), body);
    console.log(`Imported ${body.model_name}`);
    return 0;
  },
};

export const checkUpdates: Command = {
  name: "check-updates",
  summary: "Check downloaded models for newer upstream versions",
  usage: "check-updates",
  help: `Asks the hub whether each downloaded model has a newer commit.\n${SERVER_FLAGS_HELP}`,
  options: SERVER_FLAGS,
  async run(input) {
    const res = await (await connect(input)).json("POST", "/v1/models/check-updates", {});
    if (!res.updates_available) console.log("All downloaded models are up to date.");
    else console.log(`Updates available for: ${res.models.join(", ")}. Update with: lemonade pull <model>`);
    return 0;
  },
};
