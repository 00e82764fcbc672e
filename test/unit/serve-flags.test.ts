// `lemonade serve`'s flags for apps that embed it: the ready line, the parent watch and the key.
import { expect, test } from "bun:test";
import { CliError } from "../../cli/client.ts";
import { clientUrl, parentAlive, readyLine, serveSettings, watchParent } from "../../cli/commands/serve.ts";

const usageError = (f: () => unknown) => {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(CliError);
    return (err as CliError).exitCode === 2 ? (err as Error).message : `exit ${(err as CliError).exitCode}`;
  }
  throw new Error("no error");
};

test("--port 0, --ready-json and --parent-pid are read; without them nothing changes", () => {
  const s = serveSettings({ port: "0", "ready-json": true, "parent-pid": "4242" }, {});
  expect(s).toMatchObject({ port: 0, readyJson: true, parentPid: 4242 });
  const plain = serveSettings({}, { LEMONADE_API_KEY: "k" });
  expect(plain).toMatchObject({ port: undefined, readyJson: false, parentPid: undefined });
  expect(plain.env.LEMONADE_API_KEY).toBe("k");
});

test("bad values are usage errors naming the flag", () => {
  expect(usageError(() => serveSettings({ port: "65536" }, {}))).toContain("--port");
  expect(usageError(() => serveSettings({ port: "-1" }, {}))).toContain("--port");
  expect(usageError(() => serveSettings({ "parent-pid": "abc" }, {}))).toContain("--parent-pid");
  expect(usageError(() => serveSettings({ "parent-pid": "0" }, {}))).toContain("--parent-pid");
  expect(usageError(() => serveSettings({ "ctx-size": "4k" }, {}))).toContain("--ctx-size");
});

test("--generate-api-key sets a fresh random key, and refuses a second source for it", () => {
  const a = serveSettings({ "generate-api-key": true }, {}).env.LEMONADE_API_KEY!;
  const b = serveSettings({ "generate-api-key": true }, {}).env.LEMONADE_API_KEY!;
  expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/);
  expect(a).not.toBe(b);
  expect(usageError(() => serveSettings({ "generate-api-key": true }, { LEMONADE_API_KEY: "mine" }))).toContain("LEMONADE_API_KEY");
});

test("flags that ride in as the environment beat it", () => {
  const s = serveSettings({ "max-loaded-models": "3", "extra-models-dir": "/m" }, { LEMONADE_MAX_LOADED_MODELS: "1" });
  expect(s.env).toMatchObject({ LEMONADE_MAX_LOADED_MODELS: "3", LEMONADE_EXTRA_MODELS_DIR: "/m" });
});

test("the ready line is one JSON line with the port, a reachable URL, the pid and the key", () => {
  const line = readyLine(clientUrl({ url: "http://0.0.0.0:4000", port: 4000 }, "0.0.0.0"), 4000, null);
  expect(line).not.toContain("\n");
  expect(JSON.parse(line)).toEqual({ port: 4000, url: "http://127.0.0.1:4000", pid: process.pid, api_key: null });
  expect(clientUrl({ url: "http://[::]:4000", port: 4000 }, "::")).toBe("http://[::1]:4000");
  expect(clientUrl({ url: "http://127.0.0.1:4000", port: 4000 }, "127.0.0.1")).toBe("http://127.0.0.1:4000");
});

test("a parent is alive while its pid runs; a dead one, or a reparented child's, is not", async () => {
  expect(parentAlive(process.pid, false)).toBe(true);
  // This process's parent (the test runner's shell or bun) still runs, and is our parent.
  expect(parentAlive(process.ppid, true)).toBe(true);
  // A pid we were never reparented from, if it was our parent, means our parent died.
  expect(parentAlive(process.pid, true)).toBe(false);
  const child = Bun.spawn(["true"]);
  await child.exited;
  expect(parentAlive(child.pid, false)).toBe(false);
});

test("watchParent calls back once the process has gone, and not before", async () => {
  const child = Bun.spawn(["sleep", "30"]);
  let gone = 0;
  const stop = watchParent(child.pid, () => gone++, 10);
  await Bun.sleep(50);
  expect(gone).toBe(0);
  child.kill();
  await child.exited;
  for (let i = 0; i < 200 && gone === 0; i++) await Bun.sleep(10);
  expect(gone).toBe(1);
  await Bun.sleep(50);
  expect(gone).toBe(1);
  stop();
});
