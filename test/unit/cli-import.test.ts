// `lemonade import` of a remote recipe (lemonade-docs-guide-cli.md, "Options for import"): the
// recipes repository through GitHub's contents API (a loopback stand-in), --directory and
// --recipe-file, --skip-prompt/--yes requiring both, and the numbered prompts on standard input.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { startFakeServer } from "../helpers/fake-engine.ts";
import { tempDir, type TestServer } from "../helpers/server.ts";

const root = join(import.meta.dir, "..", "..");
const recipe = { model_name: "CodeRouter", recipe: "collection.router", version: "1", routing: { candidates: ["extra.coder"], default_model: "extra.coder", rules: [] } };
let server: TestServer;
let github: ReturnType<typeof Bun.serve>;

beforeAll(async () => {
  server = await startFakeServer(["coder"]);
  github = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(req) {
      const path = new URL(req.url).pathname;
      const at = `http://127.0.0.1:${github.port}`;
      if (path === "/repos/lemonade-sdk/recipes/contents") return Response.json([{ name: "coding-agents", type: "dir" }, { name: "README.md", type: "file" }]);
      if (path === "/repos/lemonade-sdk/recipes/contents/coding-agents") {
        return Response.json([
          { name: "CodeRouter.json", type: "file", download_url: `${at}/raw/CodeRouter.json` },
          { name: "notes.txt", type: "file", download_url: `${at}/raw/notes.txt` },
        ]);
      }
      if (path === "/raw/CodeRouter.json") return Response.json(recipe);
      return new Response("not found", { status: 404 });
    },
  });
});
afterAll(async () => {
  github.stop(true);
  await server.close();
});

async function lemonade(args: string[], stdin = "") {
  const child = Bun.spawn([process.execPath, "cli/main.ts", ...args], {
    cwd: root,
    env: { ...process.env, LEMONADE_CACHE_DIR: tempDir(), LEMONADE_HOST: server.url, LEMONADE_GITHUB_API_ENDPOINT: `http://127.0.0.1:${github.port}` },
    stdin: new TextEncoder().encode(stdin),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { out, err, code };
}

const models = async () => ((await (await fetch(`${server.url}/v1/models?show_all=true`)).json()).data as { id: string }[]).map((m) => m.id);

test("--directory and --recipe-file with --yes import the recipe without asking", async () => {
  const r = await lemonade(["import", "--directory", "coding-agents", "--recipe-file", "CodeRouter.json", "--yes"]);
  expect(r.code, r.err).toBe(0);
  expect(r.out).toContain("Imported user.CodeRouter");
  expect(await models()).toContain("CodeRouter");
  await fetch(`${server.url}/v1/delete`, { method: "POST", body: JSON.stringify({ model_name: "user.CodeRouter" }) });
});

test("--skip-prompt without both --directory and --recipe-file is a usage error", async () => {
  for (const args of [["import", "--skip-prompt"], ["import", "--directory", "coding-agents", "--yes"]]) {
    const r = await lemonade(args);
    expect(r.code).toBe(2);
    expect(r.err).toContain("--directory and --recipe-file are required");
  }
});

test("without flags it asks for the directory and the recipe by number; 0 skips", async () => {
  const asked = await lemonade(["import"], "1\n1\n");
  expect(asked.code, asked.err).toBe(0);
  expect(asked.err).toContain("1) coding-agents");
  expect(asked.err).toContain("1) CodeRouter.json");
  expect(asked.err).not.toContain("notes.txt");
  expect(asked.out).toContain("Imported user.CodeRouter");
  const skipped = await lemonade(["import"], "0\n");
  expect(skipped.code).toBe(0);
  expect(skipped.out).toContain("Skipped recipe import");
});

test("a recipe file the directory does not hold is named in the error, with what it holds", async () => {
  const r = await lemonade(["import", "--directory", "coding-agents", "--recipe-file", "Nope.json", "--yes"]);
  expect(r.code).toBe(1);
  expect(r.err).toContain("No recipe 'Nope.json' in coding-agents");
  expect(r.err).toContain("CodeRouter.json");
});
