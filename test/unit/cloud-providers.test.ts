// The provider registry on its own: discovery against a loopback upstream (http://, so opted in
// with allowInsecureHttp) that lists, fails and refuses, with the clock in the test's hands.
import { afterAll, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CloudProviders } from "../../models/cloud.ts";
import { tempDir } from "../helpers/server.ts";
import { freePort } from "../../engines/process.ts";

let mode: "list" | "fail" | "refuse" | "shapes" = "list";
let seenAuth: (string | null)[] = [];
let seenApiKey: (string | null)[] = [];
const upstream = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch(req) {
    seenAuth.push(req.headers.get("authorization"));
    seenApiKey.push(req.headers.get("x-api-key"));
    if (mode === "fail") return new Response("down", { status: 502 });
    if (mode === "refuse") return Response.json({ error: "no key" }, { status: 401 });
    // Entries as OpenRouter, OpenAI and Fireworks list them.
    if (mode === "shapes") {
      return Response.json({
        data: [
          { id: "openai/gpt-4o-mini", architecture: { modality: "text+image->text", input_modalities: ["text", "image"] }, supported_parameters: ["tools", "include_reasoning"], pricing: { prompt: "0.00000015", completion: "0.0000006" } },
          { id: "gpt-4o" },
          { id: "accounts/fireworks/models/kimi-k2p5", supports_chat: true, supports_tools: false },
          { id: "router/plain-model" },
          // Not chat models, which Lemonade does not list: by the id, by the output kind, by the modality.
          { id: "whisper-1" },
          { id: "text-embedding-3-small" },
          { id: "accounts/fireworks/models/flux-kontext", supports_chat: true, kind: "FLUMINA_BASE_MODEL" },
          { id: "openai/gpt-image-1", architecture: { modality: "text->image" } },
        ],
      });
    }
    return Response.json({
      object: "list",
      data: [
        { id: "accounts/acme/models/big-chat", max_output_tokens: 8192, context_length: 131072, pricing: { input: 0.6, output: 2.4 } },
        { id: "acme/embedder", labels: ["embeddings"] },
        { id: "other/embedder", labels: ["embeddings"] },
        { id: "elsewhere", recipe: "cloud" },
        { id: "" },
      ],
    });
  },
});
afterAll(() => upstream.stop(true));

function registry(cacheDir = tempDir(), env: Record<string, string> = {}) {
  let now = 1_000_000;
  const warnings: string[] = [];
  const cloud = new CloudProviders({ cacheDir, env, log: { info() {}, warn: (m) => warnings.push(m) }, now: () => now, refreshMs: 600_000 });
  return { cloud, cacheDir, warnings, advance: (ms: number) => (now += ms), now: () => now };
}

const base = () => `http://127.0.0.1:${upstream.port}/v1`;
/** A key the loopback upstream takes, allowed over its plain http://. */
const keyed = { apiKey: "sk-test", allowInsecureHttp: true };

test("discovery lists the provider's models by their short ids, with what it reports, and skips others' cloud models", async () => {
  mode = "list";
  const { cloud } = registry();
  const result = await cloud.install("acme", base(), keyed);
  expect(result.models_discovered).toBe(3);
  const models = cloud.catalogModels();
  const ids = models.map((m) => m.id);
  // Named as Lemonade names them: an `accounts/<a>/models/` wrapper cut, a leading `acme/` dropped.
  expect(ids).toEqual(["acme.big-chat", "acme.embedder", "acme.other/embedder"]);
  const big = models[0]!;
  expect(big).toMatchObject({ recipe: "cloud", type: "llm", source: "cloud", checkpoints: {} });
  expect(big.cloud).toMatchObject({ provider: "acme", upstreamId: "accounts/acme/models/big-chat", maxOutputTokens: 8192, contextLength: 131072, costInputPerMillion: 0.6, costOutputPerMillion: 2.4 });
  expect(models[1]!.type).toBe("embedding");
});

test("models are named, labelled and priced as Lemonade reads each provider's entries", async () => {
  mode = "shapes";
  const { cloud } = registry();
  await cloud.install("router", base(), keyed);
  const byId = Object.fromEntries(cloud.catalogModels().map((m) => [m.id, m]));
  // Lemonade's names: an accounts/<a>/models/ wrapper cut to <a>/, the provider's own leading segment dropped.
  expect(Object.keys(byId)).toEqual(["router.openai/gpt-4o-mini", "router.gpt-4o", "router.fireworks/kimi-k2p5", "router.plain-model"]);
  expect(byId["router.openai/gpt-4o-mini"]).toMatchObject({ labels: ["cloud", "chat", "vision", "tool-calling", "reasoning"], suggested: true });
  expect(byId["router.openai/gpt-4o-mini"]!.cloud).toMatchObject({ costInputPerMillion: 0.15, costOutputPerMillion: 0.6 });
  // An entry that reports nothing is read by its id; one that reports, by what it reports.
  expect(byId["router.gpt-4o"]!.labels).toEqual(["cloud", "chat", "vision", "tool-calling"]);
  expect(byId["router.fireworks/kimi-k2p5"]!.labels).toEqual(["cloud", "chat"]);
  expect(byId["router.plain-model"]!.labels).toEqual(["cloud", "chat"]);
});

test("a provider that fails keeps its last list, marked unavailable, and is asked again later and later", async () => {
  mode = "list";
  const r = registry();
  await r.cloud.install("acme", base(), keyed);
  // Listed while reachable first: the list the catalog keeps must not outlive the failure.
  expect(r.cloud.catalogModels().every((m) => m.cloud!.available === true)).toBe(true);
  mode = "fail";
  expect(await r.cloud.refresh("acme")).toBe(3);
  expect(r.cloud.catalogModels().every((m) => m.cloud!.available === false)).toBe(true);
  const due = () => (r.cloud as any).providers.get("acme").nextRefresh - r.now();
  expect(due()).toBe(30_000);
  await r.cloud.refresh("acme");
  expect(due()).toBe(60_000);
  await r.cloud.refresh("acme");
  expect(due()).toBe(120_000);
  mode = "list";
  await r.cloud.refresh("acme");
  expect(due()).toBe(600_000);
  expect(r.cloud.catalogModels()[0]!.cloud!.available).toBe(true);
  expect(r.warnings.some((w) => w.includes("keeping its last list"))).toBe(true);
});

test("without a key a provider is not asked and lists nothing; with one it is, as a bearer token; a refused key lists nothing", async () => {
  mode = "list";
  const r = registry();
  seenAuth = [];
  expect((await r.cloud.install("acme", base())).models_discovered).toBe(0);
  expect(seenAuth).toEqual([]);
  expect(() => r.cloud.target("acme")).toThrow(/No API key for cloud provider 'acme'. Set the LEMONADE_ACME_API_KEY env var/);
  await r.cloud.setKey("acme", "sk-runtime", true);
  expect(seenAuth).toEqual(["Bearer sk-runtime"]);
  expect(r.cloud.catalogModels()).toHaveLength(3);
  expect(r.cloud.target("acme").servers).toEqual([{ baseUrl: base(), headers: { authorization: "Bearer sk-runtime" } }]);
  mode = "refuse";
  expect(await r.cloud.refresh("acme")).toBe(0);
  await r.cloud.clearKey("acme");
  expect(seenAuth).toHaveLength(2);
  expect(r.cloud.catalogModels()).toEqual([]);
});

test("a key travels to an http:// provider only with allow_insecure_http, which is kept with it", async () => {
  mode = "list";
  const r = registry();
  await expect(r.cloud.install("plain", base(), { apiKey: "sk-x" })).rejects.toMatchObject({ status: 400, code: "insecure_http_requires_opt_in" });
  expect(r.cloud.names()).not.toContain("plain");
  await r.cloud.install("plain", base());
  await expect(r.cloud.setKey("plain", "sk-x")).rejects.toMatchObject({ status: 400, code: "insecure_http_requires_opt_in" });
  expect((await r.cloud.setKey("plain", "sk-x", true)).models_discovered).toBe(3);
  const saved = JSON.parse(readFileSync(join(r.cacheDir, "config.json"), "utf8")).cloud_providers;
  expect(saved).toEqual([{ name: "plain", base_url: base(), allow_insecure_http: true }]);
  // A later install that does not say keeps the opt-in.
  expect((await r.cloud.install("plain", base(), { apiKey: "sk-y" })).models_discovered).toBe(3);
});

test("a gateway's own auth header: the key travels in it with its prefix, the setting is kept until given again, and bad ones are refused", async () => {
  mode = "list";
  const r = registry();
  seenAuth = [];
  seenApiKey = [];
  const result = await r.cloud.install("gw", base(), { ...keyed, authHeaderName: "X-Api-Key", authHeaderPrefix: "" });
  expect(result).toMatchObject({ auth_header_name: "X-Api-Key", auth_header_prefix: "", models_discovered: 3 });
  expect([seenApiKey, seenAuth]).toEqual([["sk-test"], [null]]);
  // A later install that leaves them out keeps them, as Lemonade's are sticky.
  expect(await r.cloud.install("gw", base(), keyed)).toMatchObject({ auth_header_name: "X-Api-Key", auth_header_prefix: "" });
  expect(r.cloud.target("gw").servers[0]!.headers).toEqual({ "x-api-key": "sk-test" });
  expect(r.cloud.systemInfo()[0]).toMatchObject({ auth_header_name: "X-Api-Key", auth_header_prefix: "" });
  expect(JSON.parse(readFileSync(join(r.cacheDir, "config.json"), "utf8")).cloud_providers).toEqual([
    { name: "gw", base_url: base(), allow_insecure_http: true, auth_header_name: "X-Api-Key", auth_header_prefix: "" },
  ]);
  await expect(r.cloud.install("gw", base(), { authHeaderName: "Bad Header" })).rejects.toMatchObject({ status: 400, param: "auth_header_name" });
  await expect(r.cloud.install("gw", base(), { authHeaderName: "" })).rejects.toMatchObject({ status: 400, param: "auth_header_name" });
  await expect(r.cloud.install("gw", base(), { authHeaderPrefix: "Bearer\r\nX-Injected: 1 " })).rejects.toMatchObject({ status: 400, param: "auth_header_prefix" });
  // A hand-edited config.json with a malformed header falls back to the default rather than sending it.
  writeFileSync(join(r.cacheDir, "config.json"), JSON.stringify({ cloud_providers: [{ name: "gw", base_url: base(), allow_insecure_http: true, auth_header_name: "Bad Header" }] }));
  const again = registry(r.cacheDir);
  expect(again.cloud.systemInfo()[0]).toMatchObject({ auth_header_name: "Authorization", auth_header_prefix: "Bearer " });
});

test("providers persist in config.json beside its other keys, keys never; a restart reads them back", async () => {
  mode = "list";
  const cacheDir = tempDir();
  writeFileSync(join(cacheDir, "config.json"), JSON.stringify({ max_loaded_models: 3, cloud_providers: [{ name: "legacy", base_url: base() }, { oops: 1 }] }));
  const first = registry(cacheDir);
  expect(first.cloud.names()).toEqual(["legacy"]);
  expect(first.warnings.length).toBe(1);
  await first.cloud.install("acme", base() + "/", { apiKey: "sk-never-written", allowInsecureHttp: true });
  const file = JSON.parse(readFileSync(join(cacheDir, "config.json"), "utf8"));
  expect(file.max_loaded_models).toBe(3);
  // Written as Lemonade writes them, so either server reads the other's file.
  expect(file.cloud_providers).toEqual([{ name: "legacy", base_url: base(), allow_insecure_http: false }, { name: "acme", base_url: base(), allow_insecure_http: true }]);
  expect(JSON.stringify(file)).not.toContain("sk-never-written");
  const second = registry(cacheDir);
  expect(second.cloud.names()).toEqual(["legacy", "acme"]);
  expect(second.cloud.authState("acme")).toEqual({ env_var_set: false, runtime_key_set: false });
});

test("the environment's key wins over one set at runtime", async () => {
  mode = "list";
  const r = registry(tempDir(), { LEMONADE_ACME_API_KEY: "sk-env" });
  const result = await r.cloud.install("acme", base(), { apiKey: "sk-runtime", allowInsecureHttp: true });
  expect(result.warning).toContain("LEMONADE_ACME_API_KEY");
  expect(r.cloud.target("acme").servers[0]!.headers).toEqual({ authorization: "Bearer sk-env" });
  await expect(r.cloud.setKey("acme", "sk-runtime", true)).rejects.toMatchObject({ status: 409, code: "auth_conflict" });
  for (const bad of ["user", "extra", "builtin", "admin", "Upper", "has space", "a.b"]) {
    await expect(r.cloud.install(bad, base())).rejects.toMatchObject({ status: 400, param: "provider" });
  }
  await expect(r.cloud.install("ok", "ftp://example/v1")).rejects.toMatchObject({ status: 400, param: "base_url" });
});

test("a pool: its members saved, its keys never; each member takes its own key or the provider's; discovery asks the first that answers", async () => {
  mode = "list";
  const r = registry();
  const gone = `http://127.0.0.1:${freePort()}/v1`;
  seenAuth = [];
  const result = await r.cloud.install("farm", [{ base_url: gone, api_key: "sk-gone" }, { base_url: base() + "/" }], keyed);
  expect(result).toMatchObject({ models_discovered: 3, base_url: gone, members: [gone, base()], auth_state: { env_var_set: false, runtime_key_set: true } });
  // The unreachable first member was skipped; the second was asked with the provider's key.
  expect(seenAuth).toEqual(["Bearer sk-test"]);
  expect(r.cloud.members("farm")).toEqual([gone, base()]);
  expect(r.cloud.target("farm").servers).toEqual([
    { baseUrl: gone, headers: { authorization: "Bearer sk-gone" } },
    { baseUrl: base(), headers: { authorization: "Bearer sk-test" } },
  ]);
  const file = readFileSync(join(r.cacheDir, "config.json"), "utf8");
  expect(JSON.parse(file).cloud_providers).toEqual([{ name: "farm", base_url: gone, allow_insecure_http: true, members: [gone, base()] }]);
  expect(file).not.toContain("sk-");
  expect(r.cloud.systemInfo()[0]).toMatchObject({ name: "farm", base_url: gone, members: [gone, base()] });
  // A restart reads the pool back; its keys are gone with the process.
  const again = registry(r.cacheDir);
  expect(again.cloud.members("farm")).toEqual([gone, base()]);
  expect(again.cloud.authState("farm").runtime_key_set).toBe(false);
  // Clearing forgets the members' keys too: then no member has one.
  expect((await r.cloud.clearKey("farm")).cleared_runtime_key).toBe(true);
  expect(() => r.cloud.target("farm")).toThrow(/No API key for cloud provider 'farm'/);
  // A member without a key of its own or the provider's leaves the pool without one.
  await r.cloud.install("farm", [{ base_url: gone, api_key: "sk-gone" }, { base_url: base() }], { allowInsecureHttp: true });
  expect(() => r.cloud.target("farm")).toThrow(/No API key/);
});

test("a pool's members are refused when fewer than two, named twice, not http(s) or carrying credentials; the environment's key wins over theirs", async () => {
  mode = "list";
  const r = registry(tempDir(), { LEMONADE_FARM_API_KEY: "sk-env" });
  await expect(r.cloud.install("farm", [{ base_url: base() }])).rejects.toMatchObject({ status: 400, param: "members" });
  await expect(r.cloud.install("farm", [{ base_url: base() }, { base_url: base() + "/" }])).rejects.toMatchObject({ status: 400, param: "members" });
  await expect(r.cloud.install("farm", [{ base_url: base() }, { base_url: "http://u:p@127.0.0.1:9/v1" }])).rejects.toMatchObject({ status: 400, param: "base_url" });
  await expect(r.cloud.install("farm", [{ base_url: base() }, { base_url: "ftp://x/v1" }])).rejects.toMatchObject({ status: 400, param: "base_url" });
  // A key over http:// still needs the opt-in, whichever member it is for.
  await expect(r.cloud.install("farm", [{ base_url: "https://a.example/v1" }, { base_url: base() }])).rejects.toMatchObject({ code: "insecure_http_requires_opt_in" });
  expect(r.cloud.names()).toEqual([]);
  const result = await r.cloud.install("farm", [{ base_url: base(), api_key: "sk-member" }, { base_url: `http://127.0.0.1:${freePort()}/v1` }], { allowInsecureHttp: true });
  expect(result.warning).toContain("LEMONADE_FARM_API_KEY");
  expect(r.cloud.target("farm").servers.map((s) => s.headers.authorization)).toEqual(["Bearer sk-env", "Bearer sk-env"]);
});
