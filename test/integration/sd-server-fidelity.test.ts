// The FAKE sd-server behaves as stable-diffusion.cpp's sd-server (master-820-de298c2) does where
// Lemonade relies on it: its argument parser and --help, size rounding, the batch cap, the
// extra-args block, decoding uploads and the mask, wrong JSON types, output formats, the
// `parameters` text, and the /sdapi/v1 and /sdcpp/v1 routes. Where a real sd-server is on PATH
// and LEMONADE_TEST_SD_MODEL names a model for it, the same checks run against it too.
import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { ALLOWED_SDCPP_FLAGS, RESERVED_SDCPP_FLAGS } from "../../engines/sd-cpp.ts";
import { startEngine } from "../../engines/process.ts";
import { EngineStartError } from "../../engines/engine.ts";
import { readImage } from "../../lib/images.ts";
import { png, pngParameters, pngText } from "../../scripts/fake-engine/png.ts";
import { FAKE_DIR } from "../helpers/fake-engine.ts";

const FAKE = join(FAKE_DIR, "sd-server");
const realBinary = Bun.which("sd-server", { PATH: (process.env.PATH ?? "").split(":").filter((d) => !d.startsWith(FAKE_DIR)).join(":") });
const realModel = process.env.LEMONADE_TEST_SD_MODEL;
if (!realBinary || !realModel) console.log("sd-server fidelity: no real sd-server on PATH with LEMONADE_TEST_SD_MODEL set; checking the FAKE only");

interface Target {
  name: string;
  argv: string[];
  fake: boolean;
}

const targets: Target[] = [{ name: "FAKE sd-server", argv: [process.execPath, FAKE], fake: true }];
if (realBinary && realModel) targets.push({ name: `real sd-server (${realBinary})`, argv: [realBinary], fake: false });

/** Runs the server with `args` to its exit, with everything it printed. */
async function runToExit(t: Target, args: string[]) {
  const p = Bun.spawn([...t.argv, ...args], { stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out: out + err };
}

const running: { stop(): Promise<void> }[] = [];
afterAll(async () => {
  for (const r of running) await r.stop();
});

async function serve(t: Target, extra: string[] = []) {
  const engine = await startEngine(
    { argv: (port) => [...t.argv, "--listen-port", String(port), "-m", t.fake ? "/models/fake.safetensors" : realModel!, ...extra], healthPath: "/", readyTimeoutMs: 120_000, slots: 1 },
    () => {},
  );
  running.push(engine);
  const post = (path: string, body: unknown) => fetch(`${engine.url}${path}`, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });
  return { url: engine.url, post };
}

const decode = (b64: string) => Uint8Array.from(Buffer.from(b64, "base64"));
const sizeOf = (b64: string) => {
  const info = readImage(decode(b64));
  return "error" in info ? info : { width: info.width, height: info.height };
};

for (const t of targets) {
  describe(t.name, () => {
    test("its parser: an unknown flag is `error: unknown argument` and exit 1, -h exit 0, a missing --serve-html-path exit 1", async () => {
      const unknown = await runToExit(t, ["--no-such-flag"]);
      expect(unknown.code).toBe(1);
      expect(unknown.out).toContain("error: unknown argument: --no-such-flag");
      const help = await runToExit(t, ["-h"]);
      expect(help.code).toBe(0);
      expect(help.out).toContain("--listen-port");
      expect((await runToExit(t, ["--serve-html-path", "/no/such/file.html", "-m", "x"])).code).toBe(1);
    });

    test("every flag sdcpp_args allows, and every flag the server reserves, is one of its own (from --help), value-taking as --help shows", async () => {
      const { out } = await runToExit(t, ["--help"]);
      const shown = new Map<string, boolean>();
      for (const line of out.split("\n")) {
        const m = /^\s+((?:-[\w-]+(?:, )?)+)( <\w+>)?/.exec(line);
        if (m) for (const name of m[1]!.split(", ")) shown.set(name, m[2] !== undefined);
      }
      for (const [flag, takesValue] of Object.entries(ALLOWED_SDCPP_FLAGS)) {
        expect(shown.has(flag), flag).toBe(true);
        if (shown.get(flag)) expect(takesValue, flag).toBe(true);
      }
      for (const flag of RESERVED_SDCPP_FLAGS) expect(shown.has(flag), flag).toBe(true);
    });

    test("sizes are made in multiples of 64, rounded up; a batch is at most 8; `parameters` is sd.cpp's text", async () => {
      const s = await serve(t);
      const body = await (await s.post("/v1/images/generations", { prompt: "a lemon", size: "65x65", n: 1 })).json();
      expect(sizeOf(body.data[0].b64_json)).toEqual({ width: 128, height: 128 });
      const text = pngText(decode(body.data[0].b64_json), "parameters")!;
      expect(text.split("\n")[0]).toBe("a lemon");
      expect(text).toMatch(/Steps: \d+, CFG scale: [\d.]+, .*Seed: \d+, Size: 128x128/s);
      const wide = await (await s.post("/v1/images/generations", { prompt: "x", size: "96x64" })).json();
      expect(sizeOf(wide.data[0].b64_json)).toEqual({ width: 128, height: 64 });
      if (t.fake) {
        const zero = await (await s.post("/v1/images/generations", { prompt: "x", size: "0x0" })).json();
        expect(sizeOf(zero.data[0].b64_json)).toEqual({ width: 512, height: 512 });
      }
      const nine = await (await s.post("/v1/images/generations", { prompt: "x", size: "64x64", n: 9 })).json();
      expect(nine.data).toHaveLength(8);
    });

    test("every extra-args block is removed from the prompt and the first is applied in full", async () => {
      const s = await serve(t);
      const prompt = 'a cat <sd_cpp_extra_args>{"width":128,"height":64,"batch_count":3,"seed":77}</sd_cpp_extra_args> and <sd_cpp_extra_args>{"seed":5}</sd_cpp_extra_args>';
      const body = await (await s.post("/v1/images/generations", { prompt, size: "64x64", n: 1 })).json();
      expect(body.data).toHaveLength(3);
      expect(sizeOf(body.data[0].b64_json)).toEqual({ width: 128, height: 64 });
      const text = pngText(decode(body.data[0].b64_json), "parameters")!;
      expect(text).not.toContain("sd_cpp_extra_args");
      expect(text).toContain("Seed: 77");
      const bad = await s.post("/v1/images/generations", { prompt: "x <sd_cpp_extra_args>{nope</sd_cpp_extra_args>" });
      expect(bad.status).toBe(400);
      expect(await bad.json()).toEqual({ error: "invalid sd_cpp_extra_args" });
    });

    test("a field of the wrong JSON type is a 500 server_error; an empty body and a missing prompt are 400s", async () => {
      const s = await serve(t);
      for (const body of [{ prompt: 5 }, { prompt: "x", n: "3" }, { prompt: "x", size: 64 }]) {
        const res = await s.post("/v1/images/generations", body);
        expect(res.status, JSON.stringify(body)).toBe(500);
        expect((await res.json()).error).toBe("server_error");
      }
      expect((await fetch(`${s.url}/v1/images/generations`, { method: "POST" })).status).toBe(400);
      expect(await (await s.post("/v1/images/generations", { n: 1 })).json()).toEqual({ error: "prompt required" });
    });

    test("output_format jpeg (with output_compression) or png; another is a 400", async () => {
      const s = await serve(t);
      const body = await (await s.post("/v1/images/generations", { prompt: "x", size: "64x64", output_format: "JPEG", output_compression: 50 })).json();
      expect(body.output_format).toBe("jpeg");
      expect(readImage(decode(body.data[0].b64_json))).toEqual({ format: "jpeg", width: 64, height: 64 });
      if (t.fake) {
        const bad = await s.post("/v1/images/generations", { prompt: "x", output_format: "gif" });
        expect(bad.status).toBe(400);
        expect((await bad.json()).error).toContain("invalid output_format");
      }
    });

    test("edits: uploads are decoded and one that does not decode is skipped (a text-to-image answer); the mask is decoded and resized", async () => {
      const s = await serve(t);
      const edit = (fields: Record<string, string | Blob>) => {
        const f = new FormData();
        for (const [k, v] of Object.entries(fields)) f.set(k, v);
        return fetch(`${s.url}/v1/images/edits`, { method: "POST", body: f });
      };
      const text = new Blob(["not an image"]);
      const skipped = await (await edit({ prompt: "x", "image[]": text })).json();
      expect(sizeOf(skipped.data[0].b64_json)).toEqual({ width: 512, height: 512 });
      const image = new Blob([new Uint8Array(png(64, 64, [9, 9, 9], {}))]);
      const masked = await (await edit({ prompt: "x", "image[]": image, mask: new Blob([new Uint8Array(png(32, 32, [255, 255, 255], {}))]) })).json();
      expect(sizeOf(masked.data[0].b64_json)).toEqual({ width: 64, height: 64 });
      if (t.fake) {
        expect(pngParameters(decode(skipped.data[0].b64_json))).toMatchObject({ mode: "txt2img", images: [{ decoded: false }] });
        expect(pngParameters(decode(masked.data[0].b64_json))).toMatchObject({ mode: "img2img", mask: { decoded: true, width: 32, height: 32, resized_to: [64, 64] } });
      }
      expect((await fetch(`${s.url}/v1/images/edits`, { method: "POST", body: "{}" })).status).toBe(400);
    });

    test("/sdapi/v1: txt2img answers images, parameters and an info string; the lists answer", async () => {
      const s = await serve(t);
      const res = await (await s.post("/sdapi/v1/txt2img", { prompt: "a fig", width: 64, height: 64, seed: 3, batch_size: 2, steps: 1 })).json();
      expect(res.images).toHaveLength(2);
      expect(res.parameters).toMatchObject({ prompt: "a fig" });
      expect(JSON.parse(res.info).all_seeds).toEqual([3, 4]);
      expect(await (await s.post("/sdapi/v1/txt2img", { width: 64 })).json()).toEqual({ error: "prompt required" });
      for (const list of ["samplers", "schedulers", "sd-models", "loras", "upscalers"]) {
        expect(Array.isArray(await (await fetch(`${s.url}/sdapi/v1/${list}`)).json()), list).toBe(true);
      }
    });

    test("/sdcpp/v1: an img_gen job is queued (202), then polled to its images", async () => {
      const s = await serve(t);
      expect((await fetch(`${s.url}/sdcpp/v1/capabilities`)).status).toBe(200);
      const queued = await s.post("/sdcpp/v1/img_gen", { prompt: "a plum", width: 64, height: 64, sample_params: { sample_steps: 1 } });
      expect(queued.status).toBe(202);
      const job = await queued.json();
      expect(job).toMatchObject({ kind: "img_gen", poll_url: `/sdcpp/v1/jobs/${job.id}` });
      let state: any;
      for (let i = 0; i < 600; i++) {
        state = await (await fetch(`${s.url}${job.poll_url}`)).json();
        if (state.status === "completed" || state.status === "failed") break;
        await Bun.sleep(200);
      }
      expect(state.status).toBe("completed");
      expect(sizeOf(state.result.images[0].b64_json)).toEqual({ width: 64, height: 64 });
      expect((await fetch(`${s.url}/sdcpp/v1/jobs/nope`)).status).toBe(404);
    });
  });
}

test("a failed start is answered with the engine's own error line, though the usage text after it runs past a hundred lines", async () => {
  const err = await startEngine({ argv: (port) => [process.execPath, FAKE, "--listen-port", String(port), "--no-such-flag"], healthPath: "/", readyTimeoutMs: 10_000, slots: 1 }, () => {}).catch((e: Error) => e);
  expect(err).toBeInstanceOf(EngineStartError);
  const message = (err as Error).message;
  expect(message).toContain("engine exited with code 1");
  expect(message).toContain("error: unknown argument: --no-such-flag");
  // The usage text really is that long: the line would be lost in the last lines alone.
  expect((await runToExit(targets[0]!, ["-h"])).out.split("\n").length).toBeGreaterThan(100);
});
