// Each recipe's `*_args` is an allow-list of the flags users need, read from its engine's --help:
// every allowed flag is one the engine lists, taking a value as --help shows, and anything else
// (reserved, unsafe or unlisted) is refused before an engine starts. The engines' own --help is
// read where they are built in the cache (skipped with a message otherwise); sd-server's is the
// FAKE's, which reproduces the real one's (test/integration/sd-server-fidelity.test.ts).
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { checkAllowedArgs, EngineConfigError, type AllowedFlags } from "../../engines/engine.ts";
import { ALLOWED_LLAMA_FLAGS, LLAMACPP, llamacpp, RESERVED_LLAMA_FLAGS, UNSAFE_LLAMA_FLAGS } from "../../engines/llamacpp.ts";
import { ALLOWED_SDCPP_FLAGS, sdCpp } from "../../engines/sd-cpp.ts";
import { vllm } from "../../engines/vllm.ts";
import { ALLOWED_WHISPER_FLAGS, RESERVED_WHISPER_FLAGS, whispercpp } from "../../engines/whispercpp.ts";

const BIN = join(process.env.HOME ?? "", ".cache", "lemonade", "bin");
const LLAMA = join(BIN, "llamacpp", LLAMACPP.version, "llama-server");
const WHISPER = join(BIN, "whispercpp", "nodejs-whisper-0.3.1", "whisper-server");

/** Each flag --help lists, with the kind of value it shows: a placeholder, one in brackets
 * (optional), or none. llama.cpp lists `-fa, --flash-attn [on|off|auto]`, whisper.cpp
 * `-t N,      --threads N`. */
function helpFlags(text: string): Map<string, boolean | "optional"> {
  const flags = new Map<string, boolean | "optional">();
  for (const line of text.split("\n")) {
    // The names end where the description starts, two or more spaces on (aligned name lists,
    // `-t,    --threads N` and `-d  N,     --duration N`, are closed up first).
    const names_ = line.replace(/,\s+/g, ", ").replace(/^(\s*-\S+)\s+([A-Z]+,)/, "$1 $2");
    const head = /^\s*(-\S.*?)(?:\s{2,}|$)/.exec(names_)?.[1];
    if (!head) continue;
    const words = head.replace(/,/g, " ").split(/\s+/).filter(Boolean);
    const names = words.filter((w) => /^--?[A-Za-z]/.test(w));
    // whisper.cpp's `[default]` column may follow a long name after one space: only llama.cpp's
    // `[on|off|auto]` is an optional value.
    const placeholder = words.find((w) => !/^--?[A-Za-z]/.test(w) && !(w.startsWith("[") && !w.includes("|")));
    const kind = placeholder === undefined ? false : placeholder.startsWith("[") ? "optional" : true;
    for (const n of names) flags.set(n, kind);
  }
  return flags;
}

function checkAgainstHelp(allowed: AllowedFlags, help: Map<string, boolean | "optional">) {
  for (const [flag, kind] of Object.entries(allowed)) {
    expect(help.has(flag), `${flag} is in --help`).toBe(true);
    expect(kind, `${flag} takes a value as --help shows`).toBe(help.get(flag)!);
  }
}

const helpOf = (argv: string[]) => {
  const p = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe", timeout: 30_000 });
  return p.stdout.toString() + p.stderr.toString();
};

describe("every allowed flag is one the engine's --help lists, as it lists it", () => {
  test("llama-server", () => {
    if (!existsSync(LLAMA)) return console.log(`no llama-server built at ${LLAMA}: skipped`);
    checkAgainstHelp(ALLOWED_LLAMA_FLAGS, helpFlags(helpOf([LLAMA, "--help"])));
  });
  test("whisper-server", () => {
    if (!existsSync(WHISPER)) return console.log(`no whisper-server built at ${WHISPER}: skipped`);
    checkAgainstHelp(ALLOWED_WHISPER_FLAGS, helpFlags(helpOf([WHISPER, "--help"])));
  });
  test("sd-server (bool and value options as its parser takes them)", () => {
    const help = helpOf([process.execPath, join(import.meta.dir, "..", "..", "scripts", "fake-engine", "sd-server"), "--help"]);
    const listed = helpFlags(help);
    for (const flag of Object.keys(ALLOWED_SDCPP_FLAGS)) expect(listed.has(flag), flag).toBe(true);
  });
});

describe("the allow-lists refuse what is not on them", () => {
  test("no reserved or unsafe flag is allowed", () => {
    for (const f of [...RESERVED_LLAMA_FLAGS, ...UNSAFE_LLAMA_FLAGS]) expect(f in ALLOWED_LLAMA_FLAGS, f).toBe(false);
    for (const f of RESERVED_WHISPER_FLAGS) expect(f in ALLOWED_WHISPER_FLAGS, f).toBe(false);
  });

  test("each recipe refuses unlisted flags, and passes the ones users need", () => {
    const cases: [typeof llamacpp, string, string[], string[]][] = [
      [llamacpp, "llamacpp_args", ["--threads 4 --temp 0.7 -fa --cache-type-k q8_0 --seed -1 --parallel 2", "-fa on --no-mmap", '--alias "my model"'], ["--lora /x.gguf", "--grammar-file /etc/passwd", "-md /x.gguf", "--path /", "--props", "-h"]],
      [whispercpp, "whispercpp_args", ["--threads 2 --beam-size 5 -l auto --no-gpu"], ["--public /", "--convert", "-dtw base", "-vm /x", "--request-path /x", "-h"]],
      [sdCpp, "sdcpp_args", ["-t 4 --vae-tiling --type q8_0 --eta -0.5", "--diffusion-fa --offload-to-cpu"], ["--qwen2vl /x", "--rpc-servers h:1", "--serve-html-path /x", "--taesd /x", "--control-net /x", "-h"]],
      [vllm, "vllm_args", ["--max-model-len 4096 --enforce-eager --dtype=half"], ["--trust-remote-code", "--chat-template /x", "--lora-modules a=/x"]],
    ];
    for (const [recipe, option, ok, refused] of cases) {
      for (const args of ok) expect(() => recipe.checkOptions({ [option]: args }), args).not.toThrow();
      for (const args of refused) expect(() => recipe.checkOptions({ [option]: args }), args).toThrow(EngineConfigError);
    }
  });

  test("values: a word where a flag belongs, a missing value, negative numbers and optional values", () => {
    const allowed: AllowedFlags = { "--n": true, "--on": false, "--fa": "optional" };
    const check = (args: string[]) => () => checkAllowedArgs("x_args", allowed, ["--port"], args, "test");
    expect(check(["--n", "-1", "--on", "--fa", "--n=3"])).not.toThrow();
    expect(check(["--fa", "on", "--on"])).not.toThrow();
    expect(check(["--on", "stray"])).toThrow(/is not a flag or a flag's value/);
    expect(check(["--n"])).toThrow(/needs a value/);
    expect(check(["--port", "5"])).toThrow(/the server sets it/);
    expect(check(["--other"])).toThrow(/only test flags may be set/);
  });
});
