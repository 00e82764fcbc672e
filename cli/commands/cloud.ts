// `lemonade cloud`: cloud providers (any OpenAI-compatible server) through the server's API.
import { Client, CliError, ensureServer, target } from "../client.ts";
import { SERVER_FLAGS, SERVER_FLAGS_HELP, type Command, type CommandInput } from "../command.ts";
import { table } from "../format.ts";
import { askSecret, interactive } from "../prompt.ts";

const clientOf = (input: CommandInput) => new Client(target(input.values as { host?: string; port?: string }));

/** A key from the command line; else typed, hidden, on a terminal; else the first line of
 * standard input (kept out of `ps`). */
async function keyFrom(arg: string | undefined, provider: string): Promise<string> {
  if (arg) return arg;
  if (interactive()) {
    const typed = (await askSecret(`API key for ${provider} (input hidden): `)).trim();
    if (!typed) throw new CliError("empty API key");
    return typed;
  }
  const piped = (await new Response(Bun.stdin.stream()).text()).split("\n")[0]!.trim();
  if (!piped) throw new CliError(`--api-key is required when stdin is not a TTY (or pipe the key: echo $KEY | lemonade cloud auth ${provider})`, 2);
  return piped;
}

export const cloud: Command = {
  name: "cloud",
  summary: "Use OpenAI-compatible providers (another Lemonade, vLLM, a hosted API) beside local models",
  usage:
    "cloud list [--json] | cloud install PROVIDER (BASE_URL... | --base-url URL) [--api-key KEY] [--allow-insecure-http] [--auth-header-name HEADER] [--auth-header-prefix PREFIX] | cloud uninstall PROVIDER | cloud auth PROVIDER [KEY | --api-key KEY] [--allow-insecure-http] | cloud clear PROVIDER",
  help: `A provider's models are listed as PROVIDER.<id> with recipe "cloud" and answer like local ones.
  list                       Providers, how many models each lists and their key's state (--json: the
                             providers as /v1/system-info gives them)
  install PROVIDER BASE_URL  Add a provider; BASE_URL (or --base-url URL) ends where /v1 does (http://gpu-box:8080/v1).
                             Several BASE_URLs make a pool: servers with the same models, each request sent
                             to the least busy one that answers (/v1/health shows each member's state)
    --api-key KEY            Hold a key for it in the server's memory; without one its models are not listed
    --allow-insecure-http    Let the key travel to an http:// BASE_URL (kept with the provider)
    --auth-header-name H     Send the key in header H, for a gateway that does not take Authorization
    --auth-header-prefix P   Start the header's value with P (default 'Bearer '; "" for the bare key);
                             both are kept with the provider until given again
  uninstall PROVIDER         Remove it and its models
  auth PROVIDER [KEY]        Hold a key in the server's memory (KEY or --api-key KEY; when left out, typed
                             hidden on a terminal, or piped); --allow-insecure-http as for install
  clear PROVIDER             Forget that key
LEMONADE_<PROVIDER>_API_KEY in the server's environment takes precedence over a key set here.
${SERVER_FLAGS_HELP}`,
  options: { ...SERVER_FLAGS, json: { type: "boolean" }, "base-url": { type: "string" }, "api-key": { type: "string" }, "allow-insecure-http": { type: "boolean" }, "auth-header-name": { type: "string" }, "auth-header-prefix": { type: "string" } },
  async run(input) {
    const [action, ...args] = input.positionals;
    const flags = input.values as { "base-url"?: string; "api-key"?: string; "allow-insecure-http"?: boolean; "auth-header-name"?: string; "auth-header-prefix"?: string };
    const insecure = flags["allow-insecure-http"] ? { allow_insecure_http: true } : {};
    const client = clientOf(input);
    await ensureServer(client);
    if (action === "list" && args.length === 0) {
      // What /v1/system-info says of each provider (Lemonade's `cloud list --json` is that payload).
      const rows = ((await client.json("GET", "/v1/system-info")).cloud?.providers ?? []) as {
        name: string;
        base_url: string;
        members?: string[];
        auth_header_name?: string;
        auth_header_prefix?: string;
        env_var: string;
        env_var_set: boolean;
        runtime_key_set: boolean;
        models_discovered: number;
      }[];
      if (input.values.json) console.log(JSON.stringify(rows, null, 2));
      else if (!rows.length) console.log("No cloud providers. Add one with: lemonade cloud install PROVIDER BASE_URL");
      else {
        const auth = (r: (typeof rows)[number]) => (r.env_var_set ? `${r.env_var} set` : r.runtime_key_set ? "runtime key" : "no key");
        console.log(table(["PROVIDER", "BASE URL", "MODELS", "AUTH"], rows.map((r) => [r.name, (r.members ?? [r.base_url]).join(" "), String(r.models_discovered), auth(r)])));
        // A header other than `Authorization: Bearer <key>`, quoted so an empty or spaced prefix shows.
        for (const r of rows) {
          const name = r.auth_header_name ?? "Authorization";
          const prefix = r.auth_header_prefix ?? "Bearer ";
          if (name !== "Authorization" || prefix !== "Bearer ") console.log(`${r.name} auth header: ${name}: "${prefix}"<key>`);
        }
      }
    } else if (action === "install" && (args.length >= 2 || (args.length === 1 && flags["base-url"]))) {
      const key = flags["api-key"] ? { api_key: flags["api-key"] } : {};
      const urls = [...args.slice(1), ...(flags["base-url"] ? [flags["base-url"]] : [])];
      const server = urls.length > 1 ? { members: urls.map((base_url) => ({ base_url })) } : { base_url: urls[0] };
      const header = {
        ...(flags["auth-header-name"] !== undefined ? { auth_header_name: flags["auth-header-name"] } : {}),
        ...(flags["auth-header-prefix"] !== undefined ? { auth_header_prefix: flags["auth-header-prefix"] } : {}),
      };
      const res = await client.json("POST", "/v1/install", { backend: "cloud", provider: args[0], ...server, ...key, ...insecure, ...header });
      console.log(`Installed ${args[0]}: ${res.models_discovered} model(s) discovered${res.models_discovered ? "" : " (set a key with: lemonade cloud auth " + args[0] + ")"}`);
    } else if (action === "uninstall" && args.length === 1) {
      const res = await client.json("POST", "/v1/uninstall", { backend: "cloud", provider: args[0] });
      console.log(`Removed ${args[0]} and its ${res.models_evicted} model(s)`);
    } else if (action === "auth" && (args.length === 1 || args.length === 2)) {
      const res = await client.json("POST", "/v1/cloud/auth", { provider: args[0], api_key: await keyFrom(args[1] ?? flags["api-key"], args[0]!), ...insecure });
      console.log(`Key set for ${args[0]}: ${res.models_discovered} model(s) discovered`);
    } else if (action === "clear" && args.length === 1) {
      const res = await client.json("DELETE", `/v1/cloud/auth/${encodeURIComponent(args[0]!)}`);
      console.log(res.cleared_runtime_key ? `Forgot the key of ${args[0]}` : `${args[0]} had no key set here`);
    } else throw new CliError(`usage: lemonade ${this.usage}`, 2);
    return 0;
  },
};
