// The JavaScriptCore settings the server runs with. Without the DFG tier (the optimizing JIT; FTL,
// the top one, needs it) a load leaves little behind: the DFG's own code, about 3 MB of Bun's
// executable, is paged in by its first compile and stays, with its compiled code and profiles
// (bench memory, npm start, 10,000 requests: +2 % over idle without it, +12 % with it, after the
// idle shrink in both). The baseline JIT still compiles what runs often: bench catalog, same
// machine, two runs each: /live 40k -> 37k req/s, /api/tags 33k -> 30k, /v1/models 31k -> 24k.
// The baseline JIT stays. With no JIT at all (BUN_JSC_useJIT=0) bench memory's npm start idles
// 2.6 MB lower (42.0 MB) and ends 4-5 MB lower after the requests and the loads, but every loop
// the server runs in JavaScript runs 3-7x slower: a listing rebuilds twice as slowly and serves at
// half the rate, a 6 MB conversation takes 2.5x as long to check; with the baseline JIT alone off
// (useBaselineJIT=0), 1-3 MB lower at much the same cost.
// JavaScriptCore reads these from the environment once, when the VM is made: npm start's script
// and the .deb's systemd unit set them, and the single executable, which has no launcher, replaces
// itself with a copy of itself that has them (execve: same pid, same argv) before anything runs.
export const SERVER_RUNTIME_ENV: Readonly<Record<string, string>> = { BUN_JSC_useDFGJIT: "0" };

/** The settings this process lacks (a variable the user set, to any value, is theirs). */
export function missingRuntimeEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(SERVER_RUNTIME_ENV).filter(([key]) => env[key] === undefined));
}

/** Runs this executable again in place (`argv`: its argv as execve takes it) with the settings it
 * lacks, when it lacks any; returns when it does not (nothing missing, or no execve here: the
 * server then runs with Bun's defaults). */
export function execWithRuntimeEnv(argv: string[]): void {
  const missing = missingRuntimeEnv(process.env);
  if (Object.keys(missing).length === 0 || process.platform !== "linux") return;
  // Loaded only here: the process that has its settings never pages FFI in.
  const { dlopen, FFIType, ptr } = require("bun:ffi") as typeof import("bun:ffi");
  const keep: Buffer[] = [];
  const cString = (text: string): Buffer => {
    const bytes = Buffer.from(`${text}\0`);
    keep.push(bytes);
    return bytes;
  };
  const pointers = (list: string[]): BigUint64Array => {
    const array = new BigUint64Array(list.length + 1);
    list.forEach((text, i) => (array[i] = BigInt(ptr(cString(text)))));
    return array;
  };
  const env = { ...process.env, ...missing };
  try {
    const libc = dlopen("libc.so.6", { execve: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 } });
    const path = cString(process.execPath);
    libc.symbols.execve(ptr(path), ptr(pointers(argv)), ptr(pointers(Object.entries(env).map(([key, value]) => `${key}=${value}`))));
  } catch {
    // No glibc (dlopen failed): run on as we are.
  }
}
