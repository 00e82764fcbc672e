// What an install would fetch (/v1/install/dry-run), the manual update check on every API prefix,
// and /v1/system-info's recipes: every one Lemonade knows, each backend with its state and the
// release page of the build it is pinned to. On loopback; nothing is downloaded.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { VERSION_PREFIXES } from "../../spec/endpoint.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ LEMONADE_GITHUB_ENDPOINT: "http://127.0.0.1:9" });
});
afterAll(() => server.close());

const post = (path: string, body?: unknown) => fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });

// The pins of engines/backend-versions.json; the assets are Linux x64's.
const linuxX64 = process.platform === "linux" && process.arch === "x64";

describe("POST /v1/install/dry-run", () => {
  test.if(linuxX64)("a GPU's ROCm ISA resolves to the family its assets are published under, on every prefix", async () => {
    for (const prefix of VERSION_PREFIXES) {
      const res = await post(`${prefix}/install/dry-run`, { recipe: "llamacpp", backend: "rocm", arch: "gfx1100" });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({
        recipe: "llamacpp",
        backend: "rocm",
        arch: "gfx1100",
        repo: "lemonade-sdk/llamacpp-rocm",
        version: "b10470",
        filename: "llama-b10470-ubuntu-rocm-gfx110X-x64.zip",
        url: "http://127.0.0.1:9/lemonade-sdk/llamacpp-rocm/releases/download/b10470/llama-b10470-ubuntu-rocm-gfx110X-x64.zip",
        supports_split_archive: false,
        supported: true,
      });
    }
    const plan = async (arch: string) => (await post("/v1/install/dry-run", { recipe: "llamacpp", backend: "rocm", arch })).json();
    // A family already, and ISAs the map does not list, are used as they are.
    expect(await plan("gfx120X")).toMatchObject({ filename: "llama-b10470-ubuntu-rocm-gfx120X-x64.zip", supported: true });
    expect(await plan("gfx1151")).toMatchObject({ filename: "llama-b10470-ubuntu-rocm-gfx1151-x64.zip", supported: true });
    expect(await plan("gfx90a")).toMatchObject({ filename: "llama-b10470-ubuntu-rocm-gfx90a-x64.zip", supported: true });
    // An ISA no ROCm release is built for resolves still, and says it is not supported.
    expect(await plan("gfx1010")).toMatchObject({ filename: "llama-b10470-ubuntu-rocm-gfx1010-x64.zip", supported: false });
  });

  test.if(linuxX64)("other backends: the asset for this platform; an AMD GPU's ISA is supported by Vulkan, not by CUDA", async () => {
    expect(await (await post("/v1/install/dry-run", { recipe: "llamacpp", backend: "cpu" })).json()).toMatchObject({
      arch: "",
      repo: "ggml-org/llama.cpp",
      version: "b10375",
      filename: "llama-b10375-bin-ubuntu-x64.tar.gz",
      supported: true,
    });
    expect(await (await post("/v1/install/dry-run", { recipe: "llamacpp", backend: "vulkan", arch: "gfx1151" })).json()).toMatchObject({ filename: "llama-b10375-bin-ubuntu-vulkan-x64.tar.gz", supported: true });
    expect(await (await post("/v1/install/dry-run", { recipe: "llamacpp", backend: "cuda", arch: "gfx1151" })).json()).toMatchObject({ repo: "lemonade-sdk/llama.cpp", supported: false });
    expect(await (await post("/v1/install/dry-run", { recipe: "whispercpp", backend: "vulkan" })).json()).toMatchObject({ filename: "whisper-v1.8.4-linux-vulkan-x86_64.tar.gz" });
  });

  test("recipe and backend are required; a pair with no release to fetch is a 500 that says so", async () => {
    for (const body of [{ recipe: "llamacpp" }, { backend: "rocm" }]) {
      const res = await post("/v1/install/dry-run", body);
      expect(res.status).toBe(400);
      expect((await res.json()).code).toBe("missing_argument");
    }
    expect((await post("/v1/install/dry-run", { recipe: "", backend: "rocm" })).status).toBe(400);
    const none = await post("/v1/install/dry-run", { recipe: "flm", backend: "npu" });
    expect(none.status).toBe(500);
    expect((await none.json()).error).toBe("flm:npu has no prebuilt release");
  });

  test("nothing is installed by it", async () => {
    await post("/v1/install/dry-run", { recipe: "llamacpp", backend: "vulkan" });
    const info = await (await fetch(`${server.url}/v1/system-info`)).json();
    expect(info.recipes.llamacpp.backends.vulkan.state).not.toBe("installed");
  });
});

test("POST models/check-updates answers on every API prefix", async () => {
  for (const prefix of VERSION_PREFIXES) {
    const res = await post(`${prefix}/models/check-updates`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "success", updates_available: 0, models: [] });
  }
});

describe("GET /v1/system-info recipes", () => {
  test("every recipe Lemonade knows is listed, each backend with its state; those not run here unsupported, saying so", async () => {
    const { recipes } = await (await fetch(`${server.url}/v1/system-info`)).json();
    for (const name of ["llamacpp", "whispercpp", "sd-cpp", "kokoro", "onnxruntime", "vllm", "flm", "ryzenai-llm", "moonshine", "trellis", "acestep", "thinksound", "openmoss", "thenoise"]) {
      expect(Object.keys(recipes)).toContain(name);
      for (const backend of Object.values<{ state: string; message: string }>(recipes[name].backends)) {
        expect(["unsupported", "installable", "update_required", "installed"]).toContain(backend.state);
        if (backend.state !== "installed") expect(backend.message.length).toBeGreaterThan(0);
      }
    }
    expect(recipes.flm).toEqual({ backends: { npu: { devices: [], state: "unsupported", message: "FastFlowLM NPU (flm) is not available in this server: its models cannot be loaded here", action: "" } } });
    expect(Object.keys(recipes["ryzenai-llm"].backends)).toEqual(["npu"]);
  });

  test("each backend pinned to a release reports its page, whatever its state", async () => {
    const { recipes } = await (await fetch(`${server.url}/v1/system-info`)).json();
    const page = (recipe: string, backend: string) => recipes[recipe].backends[backend].release_url;
    expect(page("llamacpp", "cpu")).toBe("https://github.com/ggml-org/llama.cpp/releases/tag/b10375");
    expect(page("llamacpp", "vulkan")).toBe("https://github.com/ggml-org/llama.cpp/releases/tag/b10375");
    expect(page("llamacpp", "cuda")).toBe("https://github.com/lemonade-sdk/llama.cpp/releases/tag/b10397");
    expect(page("llamacpp", "rocm")).toBe("https://github.com/lemonade-sdk/llamacpp-rocm/releases/tag/b10470");
    expect(page("whispercpp", "cpu")).toBe("https://github.com/lemonade-sdk/whisper.cpp-rocm/releases/tag/v1.8.4");
    expect(page("sd-cpp", "cpu")).toBe("https://github.com/leejet/stable-diffusion.cpp/releases/tag/master-820-de298c2");
    expect(page("kokoro", "cpu")).toBe("https://github.com/lemonade-sdk/Kokoros/releases/tag/b17");
  });
});
