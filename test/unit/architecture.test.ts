// The shape of the code: no import cycle among the project's modules, and every import pointing
// down the layers README.md's Layout table describes:
//   cli -> app -> http -> protocols -> runtime -> engines, models -> observability, config -> lib, spec
import { expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { RECIPES } from "../../engines/recipes.ts";
import { RECIPE_SPECS } from "../../spec/recipes.ts";

const root = join(import.meta.dir, "..", "..");
const SOURCE_DIRS = ["spec", "lib", "config", "observability", "engines", "models", "runtime", "protocols", "http", "app", "cli", "web", "embed", "clients", "scripts"];

/** What each folder may import besides itself; scripts/ and test/ may use anything. */
const ALLOWED: Record<string, string[]> = {
  spec: [],
  lib: [],
  config: ["lib", "spec"],
  observability: ["lib", "spec"],
  engines: ["lib", "spec"],
  models: ["lib", "spec"],
  runtime: ["lib", "spec", "config", "observability", "engines", "models"],
  protocols: ["lib", "spec", "config", "observability", "models", "runtime"],
  // http/reference.ts serves generated-docs/ (markdown rendered from spec/) as the reference's pages.
  http: ["lib", "spec", "config", "observability", "runtime", "protocols", "generated-docs"],
  app: ["lib", "spec", "config", "observability", "engines", "models", "runtime", "protocols", "http"],
  cli: ["lib", "spec", "config", "app"],
  // The browser app and the generated client reach the server through its HTTP API only.
  web: [],
  // The embedding helper spawns the executable and reads its ready line: a client too.
  embed: [],
  // The generated client speaks to the server over HTTP only.
  clients: [],
};

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.tsx?$/.test(name) ? [path] : [];
  });
}

const transpilers = { ts: new Bun.Transpiler({ loader: "ts" }), tsx: new Bun.Transpiler({ loader: "tsx" }) };

/** Module -> the project modules it imports (type-only imports included: they are arrows too). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of SOURCE_DIRS.flatMap((d) => sources(join(root, d)))) {
    const text = readFileSync(file, "utf8").replace(/^#!.*/, "");
    // scanImports drops type-only imports, so those are read from the text as well.
    const specifiers = new Set([
      ...transpilers[file.endsWith(".tsx") ? "tsx" : "ts"].scanImports(text).map((i) => i.path),
      ...[...text.matchAll(/^\s*(?:import|export)\s+type\s[^;]*?from\s+"([^"]+)"/gm)].map((m) => m[1]!),
    ]);
    const local = [...specifiers].filter((s) => s.startsWith(".")).map((s) => relative(root, resolve(dirname(file), s)));
    graph.set(relative(root, file), local.filter((m) => !m.endsWith(".json")));
  }
  return graph;
}

const graph = importGraph();
const layer = (module: string) => module.split("/")[0]!;

test("the import graph has the project's modules and their arrows", () => {
  expect(graph.get("runtime/scheduler.ts")).toContain("runtime/eviction.ts");
  expect(graph.get("http/app.ts")).toContain("http/bind.ts");
  // A type-only import is an arrow too.
  expect(graph.get("runtime/context.ts")).toContain("runtime/scheduler.ts");
});

test("no import cycle among the project's modules", () => {
  const cycles: string[] = [];
  const state = new Map<string, "visiting" | "done">();
  const visit = (node: string, path: string[]) => {
    if (state.get(node) === "done") return;
    if (state.get(node) === "visiting") {
      cycles.push([...path.slice(path.indexOf(node)), node].join(" -> "));
      return;
    }
    state.set(node, "visiting");
    for (const next of graph.get(node) ?? []) visit(next, [...path, node]);
    state.set(node, "done");
  };
  for (const node of graph.keys()) visit(node, []);
  expect(cycles).toEqual([]);
});

test("every import points down the layers", () => {
  const wrong: string[] = [];
  for (const [from, targets] of graph) {
    const allowed = ALLOWED[layer(from)];
    if (!allowed) continue;
    for (const to of targets) {
      if (layer(to) !== layer(from) && !allowed.includes(layer(to))) wrong.push(`${from} -> ${to}`);
    }
  }
  expect(wrong).toEqual([]);
});

/** Recipe names as quoted literals: every registered recipe but the virtual kinds (`cloud` and
 * the collections are models with no engine, resolved as targets of their own). */
const VIRTUAL = new Set(["cloud"]);
const recipeNames = [...new Set([...RECIPES.map((r) => r.name), ...Object.keys(RECIPE_SPECS)])].filter((n) => !VIRTUAL.has(n));
const quotedNames = recipeNames.flatMap((n) => [`"${n}"`, `'${n}'`, `\`${n}\``]);

/** The string literals (and plain template literals) of a file whose whole text is a recipe name:
 * a branch, a key or an argument naming a recipe. Names inside prose or JSON examples are text. */
function recipeLiterals(file: string): string[] {
  const text = readFileSync(file, "utf8");
  // Only a file with a name in quotes can hold such a literal (one spelled with escapes aside):
  // the others are not parsed, which is most of this test's time.
  if (!quotedNames.some((q) => text.includes(q))) return [];
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, file.endsWith(".tsx") ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if ((ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) && recipeNames.includes(node.text)) {
      const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
      found.push(`${relative(root, file)}:${line + 1} "${node.text}"`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

test("no recipe is named outside engines/ and spec/recipes.ts: other layers ask what a recipe declares", () => {
  // web/ and clients/ are clients of the HTTP API and carry the recipe names the server sends;
  // scripts/ and test/ may name anything.
  const checked = SOURCE_DIRS.filter((d) => !["engines", "web", "clients", "scripts"].includes(d));
  const files = checked.flatMap((d) => sources(join(root, d))).filter((f) => relative(root, f) !== "spec/recipes.ts");
  expect(recipeNames).toContain("llamacpp");
  expect(recipeNames).toContain("espeak-ng");
  expect(files.flatMap(recipeLiterals)).toEqual([]);
});

test("the literal check finds a recipe named in code and passes its name in prose", () => {
  const dir = mkdtempSync(join(tmpdir(), "arch-"));
  const file = join(dir, "probe.ts");
  writeFileSync(file, 'const a = m.recipe === "whispercpp";\nconst b = "served by whispercpp, or sd-cpp";\nconst c = `sd-cli`;\n');
  expect(recipeLiterals(file).map((l) => l.split(" ").pop())).toEqual(['"whispercpp"', '"sd-cli"']);
  rmSync(dir, { recursive: true, force: true });
});

test("README's Layout table lists exactly the source folders of the tree", () => {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const table = readme.slice(readme.indexOf("## Layout"), readme.indexOf("## Development"));
  const listed = [...table.matchAll(/^\| `([a-z-]+)\/` \|/gm)].map((m) => m[1]!).sort();
  const ignored = new Set(["node_modules", "generated-docs", "dist"]);
  const folders = readdirSync(root, { withFileTypes: true })
    .filter((e) => e.isDirectory() && !e.name.startsWith(".") && !ignored.has(e.name))
    .map((e) => e.name)
    .sort();
  expect(listed).toEqual(folders);
  for (const dir of SOURCE_DIRS) expect(listed).toContain(dir);
});
