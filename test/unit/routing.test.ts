import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import SwaggerParser from "@apidevtools/swagger-parser";
import { LLAMACPP, RPC_SERVER_BINARY } from "../../engines/llamacpp.ts";
import { engineDir } from "../../engines/source-build.ts";
import { endpoints, mountedPaths, operations, VERSION_PREFIXES } from "../../spec/index.ts";
import { expectMatches, startTestServer, tempDir, type TestServer } from "../helpers/server.ts";

let server: TestServer;
beforeAll(async () => {
  // A stand-in for the llama.cpp build where a source build leaves it: system-info reports a
  // backend installed by the binary being there, and no test here starts an engine.
  const cacheDir = tempDir();
  const dir = engineDir(cacheDir, LLAMACPP);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, LLAMACPP.binary), "");
  writeFileSync(join(dir, RPC_SERVER_BINARY), "");
  server = await startTestServer({}, cacheDir, { engines: false });
});
afterAll(() => server.close());

describe("mounting", () => {
  test.each([...VERSION_PREFIXES])("versioned routes answer under %s", async (prefix) => {
    for (const path of ["/health", "/system-info", "/system-stats"]) {
      const res = await fetch(`${server.url}${prefix}${path}`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toContain("application/json");
    }
    const health = await (await fetch(`${server.url}${prefix}/health`)).json();
    expectMatches(operations.health.response, health);
  });

  test("root-level routes answer only at the root", async () => {
    expect((await fetch(`${server.url}/live`)).status).toBe(200);
    expect((await fetch(`${server.url}/metrics`)).status).toBe(200);
    for (const prefix of VERSION_PREFIXES) {
      expect((await fetch(`${server.url}${prefix}/live`)).status).toBe(404);
      expect((await fetch(`${server.url}${prefix}/metrics`)).status).toBe(404);
    }
  });

  test("HEAD /live and HEAD /metrics answer 200 with an empty body", async () => {
    for (const path of ["/live", "/metrics"]) {
      const res = await fetch(`${server.url}${path}`, { method: "HEAD" });
      expect(res.status).toBe(200);
      expect(await res.text()).toBe("");
    }
  });

  test("an unknown path answers 404 JSON in the OpenAI error shape", async () => {
    const res = await fetch(`${server.url}/v1/no-such-thing`);
    expect(res.status).toBe(404);
    const body = await res.json();
    expect(body.error.message).toContain("/v1/no-such-thing");
    expect(body.error.type).toBe("not_found_error");
  });

  test("under every prefix a request gets /v1's answer, its errors naming the path it was asked at", async () => {
    const labelled = async () => {
      const text = await (await fetch(`${server.url}/metrics`)).text();
      return Number(/lemonade_http_requests_total\{method="POST",route="\/v1\/load",status="400"\} (\d+)/.exec(text)?.[1] ?? 0);
    };
    const before = await labelled();
    const answer = async (prefix: string, path: string, init?: RequestInit) => {
      const res = await fetch(`${server.url}${prefix}${path}`, init);
      return { status: res.status, allow: res.headers.get("allow"), body: await res.text() };
    };
    const asks: [string, RequestInit?][] = [
      ["/no-such-thing?x=1"],
      ["/health", { method: "DELETE" }],
      ["/load", { method: "POST", headers: { "content-type": "application/json" }, body: "{" }],
    ];
    for (const [path, init] of asks) {
      const v1 = await answer("/v1", path, init);
      expect(v1.status).toBeGreaterThanOrEqual(400);
      for (const prefix of VERSION_PREFIXES.slice(1)) {
        const other = await answer(prefix, path, init);
        expect(other.body.includes(`${prefix}/`) || !v1.body.includes("/v1/"), `${prefix}${path} names the path it was asked at`).toBe(true);
        expect({ ...other, body: other.body.replaceAll(`${prefix}/`, "/v1/") }, `${prefix}${path}`).toEqual(v1);
      }
    }
    // One route, one label: the requests under the four prefixes are counted under /v1's.
    expect(await labelled()).toBe(before + VERSION_PREFIXES.length);
  });

  test("a known path asked with another method answers 405 JSON with Allow, in the route's shape", async () => {
    const res = await fetch(`${server.url}/v1/models`, { method: "POST", body: "{}" });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET, HEAD");
    expect((await res.json()).error).toMatchObject({ code: "method_not_allowed", type: "invalid_request_error" });
    const options = await fetch(`${server.url}/api/v1/models/x/options`, { method: "PUT" });
    expect(options.headers.get("allow")).toBe("DELETE, GET, HEAD, POST");
    const ollama = await fetch(`${server.url}/api/tags`, { method: "POST" });
    expect(ollama.status).toBe(405);
    expect(typeof (await ollama.json()).error).toBe("string");
  });

  test("deleting a model the registry does not know is 422", async () => {
    const res = await fetch(`${server.url}/v1/delete`, { method: "POST", body: JSON.stringify({ model_name: "no-such-model" }) });
    expect(res.status).toBe(422);
    expect((await res.json()).code).toBe("model_not_found");
  });

  test("the log stream answers at /logs/stream and under the API prefixes", async () => {
    for (const path of ["/logs/stream", "/v1/logs/stream", "/api/v1/logs/stream"]) {
      const ws = new WebSocket(`${server.url.replace("http", "ws")}${path}`);
      const first = await new Promise<any>((resolve, reject) => {
        ws.onopen = () => ws.send(JSON.stringify({ type: "logs.subscribe" }));
        ws.onmessage = (e) => resolve(JSON.parse(String(e.data)));
        ws.onerror = reject;
      });
      ws.close();
      expect(first.type, path).toBe("logs.snapshot");
    }
  });

  test("an unknown Ollama path answers 404 in Ollama's error shape", async () => {
    const res = await fetch(`${server.url}/api/no-such-thing`, { method: "POST", body: "{}" });
    expect(res.status).toBe(404);
    expect(typeof (await res.json()).error).toBe("string");
  });
});

describe("operational endpoints", () => {
  test("system-info reports host, storage and every recipe with a valid state", async () => {
    const bare = await startTestServer({}, undefined, { engines: false });
    const info = await (await fetch(`${bare.url}/v1/system-info`)).json();
    await bare.close();
    expectMatches(operations.systemInfo.response, info);
    expect(info.devices.cpu.threads).toBeGreaterThan(0);
    expect(info.model_storage.total_bytes).toBeGreaterThan(info.model_storage.free_bytes);
    expect(Object.keys(info.recipes)).toEqual(expect.arrayContaining(["llamacpp", "whispercpp"]));
    // Nothing is built into this fresh cache dir, so the source-built backend can only be installable.
    expect(info.recipes.llamacpp.backends.cpu.state).toBe("installable");
    expect(info.recipes.llamacpp.backends.cpu.action).toBe("lemonade backends install llamacpp:cpu");
    // The same request against a cache holding a build reports it installed, with its version.
    const built = (await (await fetch(`${server.url}/v1/system-info`)).json()).recipes.llamacpp;
    expect(built.backends.cpu).toMatchObject({ state: "installed", version: LLAMACPP.version });
    // The build's RPC worker binary is listed with it (`lemonade backends` shows the message).
    expect(built.backends.cpu.message).toContain(`with ${RPC_SERVER_BINARY} (lemonade worker)`);
    expect(built.default_backend).toBe("cpu");
  });

  test("system-stats reports memory in use within the machine's total", async () => {
    const stats = await (await fetch(`${server.url}/v1/system-stats`)).json();
    expectMatches(operations.systemStats.response, stats);
    const info = await (await fetch(`${server.url}/v1/system-info`)).json();
    expect(stats.memory_gb).toBeGreaterThan(0);
    expect(stats.memory_gb).toBeLessThanOrEqual(parseFloat(info["Physical Memory"]) + 0.1);
    expect(stats.cpu_percent).toBeGreaterThanOrEqual(0);
    expect(stats.cpu_percent).toBeLessThanOrEqual(100);
  });

  test("health reports the configured per-type limits and the WebSocket port", async () => {
    const other = await startTestServer({ LEMONADE_MAX_LOADED_MODELS: "3" });
    try {
      const health = await (await fetch(`${other.url}/v1/health`)).json();
      expect(health.max_models.llm).toBe(3);
      expect(health.max_models.tts).toBe(3);
      // A port of its own, serving the same WebSocket protocols as the main port.
      expect(health.websocket_port).toBeGreaterThan(0);
      expect(health.websocket_port).not.toBe(other.port);
      const ws = new WebSocket(`ws://127.0.0.1:${health.websocket_port}/logs/stream`);
      const first = await new Promise<any>((resolve, reject) => {
        ws.onopen = () => ws.send(JSON.stringify({ type: "logs.subscribe" }));
        ws.onmessage = (e) => resolve(JSON.parse(String(e.data)));
        ws.onerror = reject;
      });
      ws.close();
      expect(first.type).toBe("logs.snapshot");
      // Only the WebSocket routes: the HTTP API is the main port's.
      expect((await fetch(`http://127.0.0.1:${health.websocket_port}/v1/models`)).status).toBe(404);
    } finally {
      await other.close();
    }
  });
});

describe("OpenAPI document", () => {
  test("is a valid OpenAPI 3 document listing every route with its request schema", async () => {
    const named = await (await fetch(`${server.url}/openapi.json`)).json();
    expect(named.openapi).toMatch(/^3\./);
    await SwaggerParser.validate(structuredClone(named));
    // Bodies are `$ref`s to components.schemas: read them resolved.
    const doc: any = await SwaggerParser.dereference(structuredClone(named));
    for (const def of endpoints) {
      if (def.method === "WS") {
        // Out of `paths`, so HTTP client generators skip them.
        expect(doc["x-websockets"][def.id].paths).toEqual(mountedPaths(def));
        continue;
      }
      for (const path of mountedPaths(def)) {
        const oaPath = path.replace(/:(\w+)/g, "{$1}");
        const method = def.method.toLowerCase();
        expect(doc.paths[oaPath]?.[method], `${def.method} ${oaPath}`).toBeDefined();
        if (def.body) {
          const schema = doc.paths[oaPath][method].requestBody.content["application/json"].schema;
          // A map body (POST /internal/set) has no fixed properties, only its type.
          if ((def.body as any).properties) expect(Object.keys(schema.properties)).toEqual(Object.keys((def.body as any).properties));
          else expect(schema.type).toBe("object");
        }
      }
    }
  });

  test("the interactive page is served at /docs", async () => {
    const res = await fetch(`${server.url}/docs`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/html");
    expect(await res.text()).toContain('src="/docs/assets/init.js"');
    // The viewer is the server's own file, pointed at the server's own document.
    expect(await (await fetch(`${server.url}/docs/assets/init.js`)).text()).toContain('url: "/openapi.json"');
    expect((await fetch(`${server.url}/docs/assets/swagger-ui-bundle.js`)).headers.get("content-type")).toContain("javascript");
  });

  test("/docs links the markdown pages, served as HTML with nothing from another host", async () => {
    expect(await (await fetch(`${server.url}/docs`)).text()).toContain('href="/docs/assets/lemonade.html"');
    const res = await fetch(`${server.url}/docs/assets/lemonade.html`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/html");
    const html = await res.text();
    expect(html).toContain('<h2 id="post-v1load"><code>POST /v1/load</code></h2>');
    expect(html).not.toMatch(/<(img|script|link)\b[^>]*(src|href)="https?:/);
    expect((await fetch(`${server.url}/docs/assets/constructor`)).status).toBe(404);
  });
});
