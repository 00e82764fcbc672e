// `lemonade import` of a remote recipe (lemonade-docs-guide-cli.md, "Options for import"): the
// recipes repository through GitHub's contents API (a loopback stand-in), --directory and
// --recipe-file, --skip-prompt/--yes requiring both (as does an input that is not a terminal; the
// prompts on a terminal are test/integration/cli-prompts.test.ts's), the file's checks.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { importBody, importModel } from "../../cli/commands/models.ts";
import { startFakeServer } from "../helpers/fake-engine.ts";
import { tempDir, type TestServer } from "../helpers/server.ts";

const root = join(import.meta.dir, "..", "..");
const recipe = {
  model_name: "CodeRouter",
  recipe: "collection.router",
  version: "1",
  components: ["extra.coder"],
  routing: { candidates: ["extra.coder"], default_model: "extra.coder", rules: [{ id: "code", match: { keywords_any: ["code"] }, route_to: "extra.coder" }] },
};
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

const env = () => ({ ...process.env, LEMONADE_CACHE_DIR: tempDir(), LEMONADE_HOST: server.url, LEMONADE_GITHUB_API_ENDPOINT: `http://127.0.0.1:${github.port}` });

async function lemonade(args: string[], stdin = "") {
  const child = Bun.spawn([process.execPath, "cli/main.ts", ...args], {
    cwd: root,
    env: env(),
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
  // A user's collection is listed by its `user.` id.
  expect(await models()).toContain("user.CodeRouter");
  await fetch(`${server.url}/v1/delete`, { method: "POST", body: JSON.stringify({ model_name: "user.CodeRouter" }) });
});

/** The command's own run, in this process: for refusals made before a server is needed (how
 * `lemonade` prints a CliError and exits with its code, the tests above and below show). */
const importRun = (values: Record<string, string | boolean>, positionals: string[] = []) => importModel.run({ values, positionals });

test("--skip-prompt without both --directory and --recipe-file is refused (exit 1, as Lemonade's), and so is no terminal to ask on", async () => {
  for (const [values, missing] of [[{ "skip-prompt": true }, "--directory"], [{ directory: "coding-agents", yes: true }, "--recipe-file"]] as const) {
    await expect(importRun(values)).rejects.toMatchObject({ exitCode: 1, message: expect.stringContaining(`Non-interactive mode requires ${missing}.`) });
  }
  // Piped answers are not read: off a terminal nothing is asked (a process of its own: this one's
  // standard input may be a terminal).
  const piped = await lemonade(["import"], "1\n1\n");
  expect(piped.code).toBe(1);
  expect(piped.err).toContain("Non-interactive mode requires --directory (standard input is not a terminal to choose on)");
  expect(piped.out).not.toContain("Select a recipe directory");
  expect(await models()).not.toContain("user.CodeRouter");
});

test("a recipe file the directory does not hold is named in the error, with what it holds", async () => {
  const r = await lemonade(["import", "--directory", "coding-agents", "--recipe-file", "Nope.json", "--yes"]);
  expect(r.code).toBe(1);
  expect(r.err).toContain("Recipe file 'Nope.json' not found in directory 'coding-agents'.");
  expect(r.err).toContain("CodeRouter.json");
});

test("a definition is checked as Lemonade's import checks it: name, recipe, checkpoints; unknown fields dropped", () => {
  const cases: [unknown, string][] = [
    [{ recipe: "llamacpp", checkpoint: "o/r:Q4_0" }, "JSON file must contain a 'model_name' string field"],
    [[], "JSON file must contain a 'model_name' string field"],
    [{ model_name: "NoRecipe", checkpoint: "o/r:Q4_0" }, "JSON file must contain a 'recipe' string field"],
    [{ model_name: "NoWeights", recipe: "llamacpp" }, "JSON file must contain either 'checkpoints' (object) or 'checkpoint' (string)"],
    [{ model_name: "user.extra.Taken", recipe: "llamacpp", checkpoint: "o/r:Q4_0" }, "Model names with 'extra.' / 'builtin.' prefixes are reserved"],
  ];
  for (const [body, error] of cases) expect(() => importBody(body)).toThrow(error);
  expect(importBody({ id: "FromId", recipe: "llamacpp", checkpoint: "o/r:Q4_0", checkpoints: { main: "o/r:Q8_0" }, downloaded: true, components: [], labels: ["coding"] })).toEqual({
    model_name: "user.FromId",
    recipe: "llamacpp",
    checkpoints: { main: "o/r:Q8_0" },
    labels: ["coding"],
  });
  // A collection's weights are its components'; its definitions keep only their own fields.
  expect(importBody({ model_name: "Kit", recipe: "collection.omni", components: ["a"], models: [{ model_name: "a", recipe: "llamacpp", checkpoint: "o/r:Q4_0", suggested: true }] })).toEqual({
    model_name: "user.Kit",
    recipe: "collection.omni",
    components: ["a"],
    models: [{ model_name: "a", recipe: "llamacpp", checkpoint: "o/r:Q4_0" }],
  });
});

test("a file that does not open or parse is named in the error", async () => {
  const dir = tempDir();
  const broken = join(dir, "broken.json");
  writeFileSync(broken, "{ not json");
  await expect(importRun({}, [broken])).rejects.toMatchObject({ exitCode: 1, message: expect.stringContaining(`Failed to parse JSON file '${broken}'`) });
  await expect(importRun({}, [join(dir, "absent.json")])).rejects.toMatchObject({ exitCode: 1, message: `Failed to open JSON file '${join(dir, "absent.json")}'` });
});
