// Model commands: list, pull, delete, load, unload, pin, unpin, export, import, check-updates.
import { readFileSync, writeFileSync } from "node:fs";
import { Client, CliError, ensureServer, errorMessage, target, unreachable } from "../client.ts";
import { SERVER_FLAGS, SERVER_FLAGS_HELP, type Command, type CommandInput } from "../command.ts";
import { ProgressReporter, bold, bytes, dim, green, sseEvents, table } from "../format.ts";
import { LOAD_FLAGS, LOAD_FLAGS_HELP, loadOptionsFrom } from "../load-flags.ts";
import { GGUF_RECIPE } from "../../spec/recipes.ts";
import { askLine, chooseOne, interactive } from "../prompt.ts";

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
  summary: "List models: those here (Local) and the catalog's others (Available for Download)",
  usage: "list [--downloaded] [FILTER] [--json]",
  help: `Lists the models on this machine under "Local", then the catalog's models this system can run
under "Available for Download": Model Name, Downloaded, Size (GB) and Details (the recipe; loaded
ones say so). FILTER keeps names containing it (any case; * matches any run of characters).
  --downloaded  Only the downloaded models, in one table
  --json        Print JSON for scripts (every listed model, with "loaded")
${SERVER_FLAGS_HELP}`,
  options: { ...SERVER_FLAGS, downloaded: { type: "boolean" }, all: { type: "boolean" }, json: { type: "boolean" } },
  async run(input) {
    const [filter, ...extra] = input.positionals;
    if (extra.length) throw new CliError(`usage: lemonade ${this.usage}`, 2);
    const client = await connect(input);
    const onlyLocal = input.values.downloaded === true;
    // FILTER as Lemonade's: case-insensitive, `*` for any run of characters, found anywhere in the
    // id or the id without its source prefix.
    const bare = (id: string) => id.replace(/^(user|extra|builtin)\./, "");
    const pattern = filter === undefined ? undefined : new RegExp(filter.split("*").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(".*"), "i");
    const models = ((await client.json("GET", `/v1/models?show_all=${onlyLocal ? "false" : "true"}`)).data as any[]).filter(
      (m) => !pattern || pattern.test(m.id) || pattern.test(bare(m.id)),
    );
    // Which are loaded is this CLI's addition to Details: a server without /v1/health still lists.
    const health = await client.json("GET", "/v1/health").catch(() => ({ all_models_loaded: [] }));
    const loaded = new Set((health.all_models_loaded as any[]).map((m) => m.model_name));
    if (input.values.json) {
      console.log(JSON.stringify(models.map((m) => ({ ...m, loaded: loaded.has(m.id) })), null, 2));
      return 0;
    }
    // As Lemonade's CLI prints it: Model Name (the API id, copy-paste safe), Downloaded, Size (GB),
    // Details (the recipe; and here whether it is loaded); sorted by bare name, then source.
    const rank = (id: string) => (id.startsWith("user.") ? 1 : id.startsWith("extra.") ? 2 : id.startsWith("builtin.") ? 3 : 0);
    models.sort((a, b) => bare(a.id).localeCompare(bare(b.id)) || rank(a.id) - rank(b.id) || a.id.localeCompare(b.id));
    const size = (m: any) => (typeof m.size === "number" ? m.size.toFixed(2) : "-");
    const print = (rows: any[]) =>
      console.log(table(["Model Name", "Downloaded", "Size (GB)", "Details"], rows.map((m) => [m.id, m.downloaded ? "Yes" : "No", size(m), `${m.recipe || "-"}${loaded.has(m.id) ? ` ${green("(loaded)")}` : ""}`])));
    if (onlyLocal) {
      if (models.length) print(models);
      else console.log(`No local models downloaded${filter ? ` matching '${filter}'` : ""}.`);
      return 0;
    }
    if (!models.length) {
      console.log(`No models available${filter ? ` matching '${filter}'` : ""}`);
      return 0;
    }
    const local = models.filter((m) => m.downloaded);
    const available = models.filter((m) => !m.downloaded);
    console.log(bold("Local"));
    if (local.length) print(local);
    else console.log(`No local models downloaded${filter ? ` matching '${filter}'` : ""}.`);
    console.log("\n" + bold("Available for Download"));
    if (available.length) print(available);
    else console.log(`No models available for download${filter ? ` matching '${filter}'` : ""}.`);
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

/** Labels a registration may carry (openai.md's Model Labels). */
const LABELS = [
  "chat", "embeddings", "embedding", "reranking", "transcription", "image", "tts", "audio-generation", "classification", "classifier", "3d",
  "vision", "chat-transcription", "zero-shot", "realtime-transcription", "mtp", "on-demand", "edit", "upscaling",
  "hot", "reasoning", "tool-calling", "coding",
];

/** Checkpoint roles `--checkpoint TYPE CHECKPOINT` takes. */
const ROLES = ["main", "mmproj", "draft", "text_encoder", "vae", "diffusion_model", "llm"];

/** `owner/repo[:variant]` or a Hugging Face URL: a checkpoint, not a catalog name. */
const isCheckpoint = (s: string) => /^https?:\/\//.test(s) || /^(hf\.co|huggingface\.co)\//.test(s) || /^[\w.-]+\/[\w.-]+(:[\w.-]+)?$/.test(s);

/** The user model a bare checkpoint registers as: `user.<repo>` (with its variant). */
function nameForCheckpoint(checkpoint: string): string {
  const path = checkpoint.replace(/^https?:\/\//, "").replace(/^(hf\.co|huggingface\.co)\//, "");
  const [repo, variant] = path.split(":");
  const name = repo!.split("/")[1]!.replace(/-GGUF$/i, "");
  return `user.${name}${variant ? `-${variant}` : ""}`;
}

interface Variant {
  name: string;
  files?: string[];
  size_bytes?: number;
}

/** Picks a variant of a repository: on a terminal, Lemonade's menu (a number, or any variant's
 * name typed) of the variants the server offers, in its order; the recommended one when piped. */
async function chooseVariant(info: { variants?: Variant[] }, checkpoint: string): Promise<{ name: string; asked: boolean }> {
  const variants = info.variants ?? [];
  if (!variants.length) throw new CliError(`${checkpoint} has no GGUF variants to pull. Name one with ${checkpoint}:VARIANT`);
  if (variants.length === 1) return { name: variants[0]!.name, asked: false };
  if (!interactive()) {
    // Lemonade's usual pick: Q4_K_M, else another 4-bit quantization, else the server's first.
    const recommended = (variants.find((v) => /Q4_K_M/i.test(v.name)) ?? variants.find((v) => /Q4/i.test(v.name)) ?? variants[0]!).name;
    process.stderr.write(dim(`Pulling the recommended variant ${recommended} (name another with ${checkpoint}:VARIANT)\n`));
    return { name: recommended, asked: false };
  }
  const label = (v: Variant) => {
    const count = v.files?.length ?? 1;
    return `${v.name}  (${count} ${count === 1 ? "file" : "files"}, ${bytes(v.size_bytes ?? 0)})`;
  };
  process.stdout.write(`Select a variant:\n${variants.map((v, i) => `  ${i + 1}) ${label(v)}\n`).join("")}`);
  const answer = await askLine("Enter number, or type any variant name: ");
  if (answer === null) throw new CliError("Failed to read selection.");
  if (!answer) throw new CliError("variant is required.");
  if (!/^\d+$/.test(answer)) return { name: answer, asked: true };
  const chosen = variants[Number(answer) - 1];
  if (!chosen) throw new CliError("selection out of range.");
  return { name: chosen.name, asked: true };
}

/** The name a chosen variant registers under, offered as the default, as Lemonade asks it. */
async function chooseName(suggested: string): Promise<string> {
  const bare = suggested.replace(/^user\./, "");
  process.stdout.write(`Choose a model name.\nPress enter to use the default: ${bare}\nOr type a custom name and press enter.\n`);
  const answer = await askLine("> ");
  if (answer === null) throw new CliError("Failed to read the model name.");
  return `user.${(answer || bare).replace(/^user\./, "")}`;
}

export const pull: Command = {
  name: "pull",
  summary: "Download a model: a catalog name, owner/repo[:variant] or a Hugging Face URL",
  usage: "pull MODEL_OR_CHECKPOINT [--checkpoint TYPE CHECKPOINT]... [--recipe R] [--label L]... [--alias A] [--source S] [--components A B ...]",
  help: `Downloads a catalog model into the Hugging Face cache, showing progress. Given owner/repo[:variant]
or a Hugging Face URL, registers it as a user model first; with no variant, asks which one on a
terminal, and the name (the recommended one, and its usual name, when piped). Or name the
model and give its checkpoints:
  --checkpoint TYPE C  A checkpoint by role (main, mmproj, draft, vae, text_encoder), repeatable:
                       --checkpoint main org/m-GGUF:Q4_K_M --checkpoint mmproj mmproj.gguf
                       (a single --checkpoint C is the main one)
  --recipe R           Recipe of the model the checkpoints make (default llamacpp)
  --label L            Label of that model, repeatable (chat, embeddings, vision, reasoning, ...)
  --alias A            Also bind alias A to the model
  --source S           Registry: huggingface (default) or modelscope
  --components A B ... The models of a collection.omni (with --recipe collection.omni)
  --mmproj F           Multimodal projector file in the checkpoint's repo
${SERVER_FLAGS_HELP}`,
  options: {
    ...SERVER_FLAGS,
    checkpoint: { type: "string", multiple: true },
    recipe: { type: "string" },
    mmproj: { type: "string" },
    label: { type: "string", multiple: true },
    alias: { type: "string" },
    source: { type: "string" },
    components: { type: "string", multiple: true },
  },
  rewrite(args) {
    // `--checkpoint TYPE CHECKPOINT` (two values) becomes `--checkpoint TYPE=CHECKPOINT`, and the
    // models after `--components` each become a value of it.
    const out: string[] = [];
    for (let i = 0; i < args.length; i++) {
      const a = args[i]!;
      if (a === "--checkpoint" && ROLES.includes(args[i + 1] ?? "") && args[i + 2] !== undefined && !args[i + 2]!.startsWith("--")) {
        out.push(a, `${args[i + 1]}=${args[i + 2]}`);
        i += 2;
      } else if (a === "--components") {
        while (args[i + 1] !== undefined && !args[i + 1]!.startsWith("--")) out.push("--components", args[++i]!);
      } else out.push(a);
    }
    return out;
  },
  async run(input) {
    const target = oneModel(input, this.usage);
    const v = input.values;
    for (const label of (v.label as string[] | undefined) ?? []) {
      if (!LABELS.includes(label)) throw new CliError(`'${label}' is not a label. Valid labels: ${LABELS.join(", ")}. Run with --help for the options.`, 2);
    }
    if (v.source !== undefined && !["huggingface", "hf", "modelscope", "ms"].includes(String(v.source))) {
      throw new CliError(`--source ${v.source}: use huggingface or modelscope. Run with --help for the options.`, 2);
    }
    // Exit 1, as Lemonade's CLI refuses them after parsing: --recipe, --label or --components make
    // the pull a manual registration, which names its checkpoints (an omni collection, its components).
    if (v.recipe === "collection.omni") {
      if (!v.components) throw new CliError("omni pull requires --components MODEL [MODEL ...].\n       See 'lemonade pull --help'.");
    } else if ((v.recipe !== undefined || v.label !== undefined || v.components !== undefined) && !v.checkpoint) {
      throw new CliError("manual pull requires at least one --checkpoint TYPE CHECKPOINT.\n       See 'lemonade pull --help'.");
    }
    const client = await connect(input);
    const body: Record<string, unknown> = { model_name: target };
    const checkpoints: Record<string, string> = {};
    for (const c of (v.checkpoint as string[] | undefined) ?? []) {
      const eq = c.indexOf("=");
      if (eq > 0 && ROLES.includes(c.slice(0, eq))) checkpoints[c.slice(0, eq)] = c.slice(eq + 1);
      else checkpoints.main = c;
    }
    if (v.components) Object.assign(body, { recipe: "collection.omni", components: v.components });
    else if (Object.keys(checkpoints).length) Object.assign(body, { checkpoints, recipe: v.recipe ?? GGUF_RECIPE });
    else if (isCheckpoint(target)) {
      let checkpoint = target;
      let name: string | undefined;
      if (!/:[\w.-]+$/.test(checkpoint.replace(/^https?:\/\//, ""))) {
        const info = await client.json("GET", `/v1/pull/variants?checkpoint=${encodeURIComponent(checkpoint)}`);
        // A published collection is pulled whole, by its repository.
        if (info.recipe === "collection.omni") Object.assign(body, { model_name: `user.${info.suggested_name}`, checkpoint, recipe: info.recipe });
        else {
          const variant = await chooseVariant(info, checkpoint);
          checkpoint = `${checkpoint}:${variant.name}`;
          if (variant.asked) name = await chooseName(nameForCheckpoint(checkpoint));
        }
      }
      if (!body.recipe) Object.assign(body, { model_name: name ?? nameForCheckpoint(checkpoint), checkpoint, recipe: v.recipe ?? GGUF_RECIPE });
    }
    if (v.mmproj) body.mmproj = v.mmproj;
    if (v.label) body.labels = v.label;
    if (v.source !== undefined && (body.checkpoint !== undefined || body.checkpoints !== undefined)) body.source = v.source;
    await pullWithProgress(client, body);
    const name = String(body.model_name);
    if (v.alias) await client.json("POST", "/internal/aliases", { alias: v.alias, target: name });
    console.log(`Installed ${name}${v.alias ? ` (alias ${v.alias})` : ""}. Load it with: lemonade load ${name}`);
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

/** POST /v1/load, saying meanwhile what the server does first: an engine install the load waits
 * for (GET /v1/installs, each phase and every 10 % once), then the loading of the weights. */
export async function loadWithPhases(client: Client, body: Record<string, unknown>, say: (line: string) => void, everyMs = 1000): Promise<any> {
  const model = String(body.model_name);
  say(`Loading ${model}...`);
  let last = "";
  let installed = false;
  let done = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  // One look at a time, the next scheduled when this one is answered, so the lines keep their order.
  const look = async () => {
    const installs = (await client.json("GET", "/v1/installs").catch(() => [])) as { recipe: string; backend: string; phase: string; percent: number }[];
    if (done) return;
    const line = installs.length
      ? installs.map((i) => `Installing ${i.recipe} (${i.backend}): ${i.phase}, ${Math.floor(i.percent / 10) * 10} %`).join("; ")
      : installed
        ? `Loading the weights of ${model}...`
        : "";
    installed ||= installs.length > 0;
    if (line && line !== last) say((last = line));
    timer = setTimeout(look, everyMs);
  };
  timer = setTimeout(look, everyMs);
  try {
    return await client.json("POST", "/v1/load", body);
  } finally {
    done = true;
    clearTimeout(timer);
  }
}

export const load: Command = {
  name: "load",
  summary: "Load a model into memory, with any recipe option",
  usage: "load MODEL [load options]",
  help: `Loads a model now (downloading it first if needed).
${LOAD_FLAGS_HELP}
${SERVER_FLAGS_HELP}`,
  options: { ...SERVER_FLAGS, ...LOAD_FLAGS },
  async run(input) {
    const model = oneModel(input, this.usage);
    const said = (line: string) => process.stderr.write(dim(`${line}\n`));
    console.log((await loadWithPhases(await connect(input), { model_name: model, ...loadOptionsFrom(input.values) }, said)).message);
    return 0;
  },
};

export const unload: Command = {
  name: "unload",
  summary: "Unload a model, or every model when none is named",
  usage: "unload [MODEL]",
  help: `Stops a model's engine once its requests finish; with no MODEL, every model's.\n${SERVER_FLAGS_HELP}`,
  options: { ...SERVER_FLAGS, all: { type: "boolean" } },
  async run(input) {
    const client = new Client(target(input.values as { host?: string; port?: string }));
    if (!(await client.isUp())) throw unreachable(client);
    const [model, ...extra] = input.positionals;
    if (extra.length || (model && input.values.all)) throw new CliError(`usage: lemonade ${this.usage}`, 2);
    console.log((await client.json("POST", "/v1/unload", model ? { model_name: model } : {})).message);
    return 0;
  },
};

const pinCommand = (pinned: boolean): Command => ({
  name: pinned ? "pin" : "unpin",
  summary: pinned ? "Pin a loaded model so that it is never evicted" : "Let a pinned model be evicted again",
  usage: `${pinned ? "pin" : "unpin"} MODEL`,
  help: `${pinned ? "Pins" : "Unpins"} a loaded model (POST /internal/pin).\n${SERVER_FLAGS_HELP}`,
  options: SERVER_FLAGS,
  async run(input) {
    const model = oneModel(input, this.usage);
    await (await connect(input)).json("POST", "/internal/pin", { model_name: model, pinned });
    console.log(`${pinned ? "Pinned" : "Unpinned"} ${model}`);
    return 0;
  },
});

export const pin = pinCommand(true);
export const unpin = pinCommand(false);

/** The name an exported model registers under: `/v1/pull` registers user models only, so the
 * model's bare name (its canonical id without the source) under `user.`. */
const userName = (m: any) => `user.${String(m.canonical_id ?? m.id).replace(/^(user|extra|builtin)\./, "")}`;

/** The /v1/pull body that re-creates a model elsewhere (POST-able as it is); a collection
 * carries each component's definition, and a router its policy with the schema version /v1/pull
 * requires. web/models.tsx has its twin (the web app imports nothing of the project's), and
 * test/integration/web-fake-engines.test.ts checks the two write the same file. */
function exportBody(m: any): Record<string, unknown> {
  if ((m.recipe === "collection.omni" || m.recipe === "collection.router") && m.components?.length) {
    // Each definition under the name the collection lists it by, so an import matches them up.
    const models = (m.models ?? []).flatMap((d: any, i: number) => (d ? [{ ...exportBody(d), model_name: m.components[i] }] : []));
    return {
      model_name: userName(m),
      recipe: m.recipe,
      components: m.components,
      models,
      ...(m.routing ? { version: m.version, routing: m.routing } : {}),
      ...(m.system_prompt ? { system_prompt: m.system_prompt } : {}),
    };
  }
  const body: Record<string, unknown> = { model_name: userName(m), recipe: m.recipe, checkpoints: m.checkpoints, labels: m.labels };
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

export interface RecipeEntry {
  name: string;
  type: string;
  download_url?: string | null;
}

/** The remote recipes (github.com/lemonade-sdk/recipes) under a folder, through GitHub's contents
 * API (LEMONADE_GITHUB_API_ENDPOINT stands in for api.github.com). */
export async function recipeContents(dir: string): Promise<RecipeEntry[]> {
  const api = (process.env.LEMONADE_GITHUB_API_ENDPOINT ?? "https://api.github.com").replace(/\/+$/, "");
  const url = `${api}/repos/lemonade-sdk/recipes/contents${dir ? `/${dir.split("/").map(encodeURIComponent).join("/")}` : ""}`;
  const res = await fetch(url, { headers: { "X-GitHub-Api-Version": "2022-11-28", accept: "application/vnd.github+json" } }).catch((err: Error) => {
    throw new CliError(`GitHub API request failed: ${err.message}`);
  });
  if (!res.ok) throw new CliError(`GitHub API request failed with status ${res.status}${dir ? ` (no recipes directory '${dir}'?)` : ""}`);
  const body = await res.json();
  if (!Array.isArray(body)) throw new CliError("Unexpected GitHub API response shape (expected array).");
  return body as RecipeEntry[];
}

/** A directory's JSON recipe files. */
export const recipeFiles = async (dir: string) => (await recipeContents(dir)).filter((e) => e.type === "file" && e.name.endsWith(".json"));

/** The fields an imported definition keeps (Lemonade's import drops the rest). */
const IMPORT_KEYS = ["checkpoint", "checkpoints", "components", "model_name", "models", "image_defaults", "labels", "recipe", "recipe_options", "routing", "source", "size", "system_prompt", "version"];

/** A definition's own fields: `id` read as `model_name`, `checkpoint` dropped beside `checkpoints`,
 * unknown fields dropped. */
function importFields(raw: Record<string, unknown>): Record<string, unknown> {
  const body = { ...raw };
  if (typeof body.model_name !== "string" && typeof body.id === "string") body.model_name = body.id;
  if (typeof body.checkpoints === "object" && body.checkpoints !== null) delete body.checkpoint;
  return Object.fromEntries(Object.entries(body).filter(([k]) => IMPORT_KEYS.includes(k)));
}

/** An exported (or hand-written) definition checked and made a /v1/pull body, as Lemonade's
 * import checks it (lemonade-docs-guide-cli.md, "JSON File Format"). */
export function importBody(parsed: unknown): Record<string, unknown> {
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new CliError("JSON file must contain a 'model_name' string field");
  const body = importFields(parsed as Record<string, unknown>);
  const name = body.model_name;
  if (typeof name !== "string" || !name) throw new CliError("JSON file must contain a 'model_name' string field");
  const bare = name.replace(/^user\./, "");
  if (/^(extra|builtin)\./.test(bare)) {
    throw new CliError("Model names with 'extra.' / 'builtin.' prefixes are reserved, including as bare-name parts of a 'user.' alias. Use 'user.<name>' for import where <name> does not begin with 'extra.' or 'builtin.'.");
  }
  body.model_name = `user.${bare}`;
  if (typeof body.recipe !== "string") throw new CliError("JSON file must contain a 'recipe' string field");
  // A collection has no weights of its own: its components carry them.
  const collection = body.recipe.startsWith("collection.");
  const hasCheckpoint = typeof body.checkpoint === "string" || (typeof body.checkpoints === "object" && body.checkpoints !== null && !Array.isArray(body.checkpoints));
  if (!collection && !hasCheckpoint) throw new CliError("JSON file must contain either 'checkpoints' (object) or 'checkpoint' (string)");
  if (!collection) {
    delete body.components;
    delete body.models;
  } else if (Array.isArray(body.models)) {
    body.models = body.models.map((m) => (typeof m === "object" && m !== null ? importFields(m as Record<string, unknown>) : m));
  }
  return body;
}

/** Imports a definition: registers it and downloads what it needs. Returns its name. */
async function importDefinition(client: Client, parsed: unknown): Promise<string> {
  const body = importBody(parsed);
  await pullWithProgress(client, body);
  console.log(`Imported ${body.model_name}`);
  return String(body.model_name);
}

/** Downloads a remote recipe file and imports it. */
export async function importRemote(client: Client, dir: string, file: RecipeEntry): Promise<string> {
  if (!file.download_url) throw new CliError("Selected recipe does not expose a download URL.");
  const res = await fetch(file.download_url).catch((err: Error) => {
    throw new CliError(`Recipe download failed: ${err.message}`);
  });
  if (!res.ok) throw new CliError(`Recipe download failed (HTTP ${res.status})`);
  let parsed: unknown;
  try {
    parsed = await res.json();
  } catch (err) {
    throw new CliError(`Failed to parse JSON file '${dir}/${file.name}': ${(err as Error).message}`);
  }
  return importDefinition(client, parsed);
}

/** Off a terminal nothing can be chosen: `import` then runs as --skip-prompt does, needing both flags. */
function checkNonInteractive(directory: string | undefined, recipeFile: string | undefined, skipPrompt: boolean): void {
  if (!skipPrompt && interactive()) return;
  const why = skipPrompt ? "" : " (standard input is not a terminal to choose on)";
  // Exit 1, as Lemonade's import refuses it.
  if (!directory) throw new CliError(`Non-interactive mode requires --directory${why}. Pass --directory DIR --recipe-file FILE.`);
  if (!recipeFile) throw new CliError(`Non-interactive mode requires --recipe-file${why}. Pass --directory DIR --recipe-file FILE.`);
}

/** `import` without a file: a recipe of github.com/lemonade-sdk/recipes, the directory and the
 * file each asked for when not given. Null when the user skips. */
async function remoteRecipe(client: Client, directory: string | undefined, recipeFile: string | undefined): Promise<string | null> {
  let dir = directory;
  if (!dir) {
    const dirs = (await recipeContents("")).filter((e) => e.type === "dir").map((e) => e.name);
    if (!dirs.length) throw new CliError("No recipe directories found in lemonade-sdk/recipes.");
    const picked = await chooseOne("Select a recipe directory:", dirs, "Continue without recipe import");
    if (picked < 0) return null;
    dir = dirs[picked]!;
  }
  const files = await recipeFiles(dir);
  if (!files.length) throw new CliError(`No JSON recipes found in directory '${dir}'.`);
  let file = files.find((f) => f.name === recipeFile);
  if (recipeFile && !file) throw new CliError(`Recipe file '${recipeFile}' not found in directory '${dir}'. Its recipes: ${files.map((f) => f.name).join(", ")}`);
  if (!file) {
    const picked = await chooseOne("Select a recipe to import:", files.map((f) => f.name), "Continue without recipe import");
    if (picked < 0) return null;
    file = files[picked]!;
  }
  return importRemote(client, dir, file);
}

export const importModel: Command = {
  name: "import",
  summary: "Register and download a model from an exported file or a remote recipe",
  usage: "import [JSON_FILE] [--directory DIR] [--recipe-file FILE] [--skip-prompt | --yes]",
  help: `Registers the model a JSON file defines (model_name or id, recipe, checkpoint or checkpoints;
labels, recipe_options, image_defaults, size) and downloads it; other fields are dropped. A name
outside the user. namespace is imported as user.<name>. Without JSON_FILE, imports a recipe from
github.com/lemonade-sdk/recipes, asking on a terminal for the directory and the recipe file:
  --directory DIR      The recipes directory (e.g. coding-agents)
  --recipe-file FILE   The recipe's JSON file in it
  --skip-prompt        Ask nothing: --directory and --recipe-file are then both required (as they
                       are when standard input is not a terminal)
  --yes                Same as --skip-prompt
${SERVER_FLAGS_HELP}`,
  options: { ...SERVER_FLAGS, directory: { type: "string" }, "recipe-file": { type: "string" }, "skip-prompt": { type: "boolean" }, yes: { type: "boolean" } },
  async run(input) {
    const [file, ...extra] = input.positionals;
    if (extra.length) throw new CliError(`usage: lemonade ${this.usage}`, 2);
    const flags = input.values as { directory?: string; "recipe-file"?: string; "skip-prompt"?: boolean; yes?: boolean };
    if (file) {
      let text: string;
      try {
        text = readFileSync(file, "utf8");
      } catch {
        throw new CliError(`Failed to open JSON file '${file}'`);
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch (err) {
        throw new CliError(`Failed to parse JSON file '${file}': ${(err as Error).message}`);
      }
      // Checked before a server is needed.
      importBody(parsed);
      await importDefinition(await connect(input), parsed);
      return 0;
    }
    checkNonInteractive(flags.directory, flags["recipe-file"], flags["skip-prompt"] === true || flags.yes === true);
    const imported = await remoteRecipe(await connect(input), flags.directory, flags["recipe-file"]);
    if (imported === null) console.log("Skipping recipe import.");
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
