// `lemonade worker`: llama.cpp's rpc-server on loopback, and the TLS listener (engines/rpc-link.ts)
// that is the only way to it from another machine. It serves nothing else and registers nowhere:
// a server lists it in `llamacpp.rpc_workers`.
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import net from "node:net";
import tls from "node:tls";
import type { Subprocess } from "bun";
import { readLines } from "../lib/lines.ts";
import { EngineConfigError, EngineStartError } from "./engine.ts";
import { EngineRegistry } from "./orphans.ts";
import { ENGINE_TOKEN_VAR, freePort } from "./process.ts";
import type { WorkerStatus } from "./rpc-address.ts";
import { ANSWER, checkOpening, ExactReader, keyingOf, OPENING_BYTES, proof, REQUEST } from "./rpc-link.ts";

export interface WorkerOptions {
  /** The `ggml-rpc-server` binary. */
  rpcBinary: string;
  /** Where the TLS listener listens (the only port of a worker another machine reaches). */
  host: string;
  port: number;
  secret: string;
  /** Where the worker's TLS key and certificate are kept (made on first start). */
  stateDir: string;
  /** rpc-server's `-d`: the devices it exposes (such as `CUDA0,CUDA1`); empty for all. */
  devices?: string;
  /** rpc-server's `-t`: CPU threads. */
  threads?: number;
  /** rpc-server's `-c` file cache of large tensors, in this folder (its `LLAMA_CACHE`). */
  tensorCacheDir?: string;
  /** Memory to offer, in bytes: the free memory reported is capped at it, and the server sizes
   * its share of the model by that report (rpc-server has no limit of its own). */
  memoryLimitBytes?: number;
  log(line: string): void;
}

export interface RunningWorker {
  /** The TLS listener's port. */
  readonly port: number;
  readonly pid: number;
  /** Settles when rpc-server exits. */
  readonly exited: Promise<number>;
  status(): Promise<WorkerStatus>;
  stop(): Promise<void>;
}

/** A self-signed key and certificate for the worker's TLS listener, made once with openssl. */
async function ensureCertificate(dir: string): Promise<{ key: string; cert: string }> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const key = join(dir, "worker-key.pem");
  const cert = join(dir, "worker-cert.pem");
  if (!existsSync(key) || !existsSync(cert)) {
    const argv = ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert, "-days", "3650", "-subj", "/CN=lemonade-worker"];
    let child: Subprocess;
    try {
      child = Bun.spawn(argv, { stdout: "ignore", stderr: "pipe" });
    } catch {
      throw new EngineConfigError("lemonade worker needs the openssl command to make its TLS certificate (apt install openssl)");
    }
    if ((await child.exited) !== 0) throw new EngineConfigError(`openssl could not make the worker's certificate: ${await new Response(child.stderr as ReadableStream).text()}`);
  }
  return { key: await Bun.file(key).text(), cert: await Bun.file(cert).text() };
}

/** rpc-server's answer to HELLO, DEVICE_COUNT and GET_DEVICE_MEMORY, asked over its loopback port
 * (ggml-rpc.cpp: a command byte, a u64 size, the request; the answer a u64 size and its bytes). */
async function askRpcServer(port: number): Promise<{ protocol: string; memory: { free: number; total: number }[] }> {
  const socket = net.connect({ host: "127.0.0.1", port });
  const reader = new ExactReader(socket);
  const call = async (cmd: number, body: Buffer, answerBytes: number) => {
    const head = Buffer.alloc(9);
    head[0] = cmd;
    head.writeBigUInt64LE(BigInt(body.length), 1);
    socket.write(Buffer.concat([head, body]));
    const size = Number((await reader.read(8)).readBigUInt64LE(0));
    if (size !== answerBytes) throw new Error(`rpc-server answered command ${cmd} with ${size} bytes, not ${answerBytes}`);
    return reader.read(size);
  };
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("error", reject);
    });
    // HELLO (14) with no transport capabilities (24 zero bytes): plain TCP.
    const hello = await call(14, Buffer.alloc(24), 28);
    const count = (await call(15, Buffer.alloc(0), 4)).readUInt32LE(0);
    const memory: { free: number; total: number }[] = [];
    for (let i = 0; i < count; i++) {
      const req = Buffer.alloc(4);
      req.writeUInt32LE(i);
      const m = await call(11, req, 16);
      memory.push({ free: Number(m.readBigUInt64LE(0)), total: Number(m.readBigUInt64LE(8)) });
    }
    return { protocol: `${hello[0]}.${hello[1]}.${hello[2]}`, memory };
  } finally {
    socket.destroy();
  }
}

/** Whether something accepts connections on this loopback port (closed again at once). */
function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: "127.0.0.1", port });
    s.once("connect", () => (s.destroy(), resolve(true)));
    s.once("error", () => resolve(false));
  });
}

/** A device line of rpc-server's start-up banner: `  CPU: AMD Ryzen 9 (64000 MiB, 60000 MiB free)`. */
const DEVICE_LINE = /^\s+([^\s:]+): (.*) \(\d+ MiB, \d+ MiB free\)$/;

export async function startWorker(opts: WorkerOptions): Promise<RunningWorker> {
  const identity = await ensureCertificate(opts.stateDir);
  const rpcPort = freePort();
  const argv = [opts.rpcBinary, "-H", "127.0.0.1", "-p", String(rpcPort)];
  if (opts.devices) argv.push("-d", opts.devices);
  if (opts.threads) argv.push("-t", String(opts.threads));
  if (opts.tensorCacheDir) argv.push("-c");
  // A worker killed outright (SIGKILL, a power cut of its terminal) cannot stop its rpc-server:
  // each rpc-server is written down as the server's engines are, and the next worker started on
  // this folder stops the ones whose worker is gone.
  const registry = new EngineRegistry(opts.stateDir);
  const reaped = registry.reapOrphans();
  if (reaped.length) opts.log(`stopped rpc-server(s) left running by a worker that was killed (pids ${reaped.join(", ")})`);
  const token = crypto.randomUUID();
  registry.intend(token, opts.rpcBinary);
  const child = Bun.spawn(argv, {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, [ENGINE_TOKEN_VAR]: token, ...(opts.tensorCacheDir ? { LLAMA_CACHE: opts.tensorCacheDir } : {}) },
  });
  registry.started(token, child.pid);
  const names: { name: string; description: string }[] = [];
  // rpc-server's banner sits in its stdout buffer until it accepts its first client (it flushes
  // then): the device names arrive after the first status query, which waits for them.
  const banner = Promise.withResolvers<void>();
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    for await (const line of readLines(stream)) {
      const d = DEVICE_LINE.exec(line);
      if (d) names.push({ name: d[1]!, description: d[2]! });
      if (/^\s+transport\s*:|Accepted client connection/.test(line)) banner.resolve();
      if (line.trim()) opts.log(`rpc-server: ${line}`);
    }
  };
  void pump(child.stdout);
  void pump(child.stderr);
  const stopChild = () => child.kill("SIGKILL");
  process.on("exit", stopChild);
  let exitCode: number | null = null;
  void child.exited.then((c) => {
    exitCode = c;
    registry.remove(token);
  });
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (exitCode !== null) throw new EngineStartError(`rpc-server exited with code ${exitCode} before it listened`);
    if (await canConnect(rpcPort)) break;
    if (Date.now() > deadline) {
      stopChild();
      throw new EngineStartError("rpc-server did not listen within 30 s");
    }
    await Bun.sleep(20);
  }

  let clients = 0;
  const cap = (free: number) => (opts.memoryLimitBytes ? Math.min(free, opts.memoryLimitBytes) : free);
  let last: WorkerStatus | null = null;
  /** Asks rpc-server afresh while nobody holds it (it serves one client at a time, so asking then
   * would wait behind the model's connection); the last answer otherwise. */
  const status = async (): Promise<WorkerStatus> => {
    if (clients === 0 || !last) {
      const asked = await askRpcServer(rpcPort);
      last = {
        protocol: asked.protocol,
        devices: asked.memory.map((m, i) => ({ name: names[i]?.name ?? `dev${i}`, description: names[i]?.description ?? "", free: cap(m.free), total: m.total })),
        clients: 0,
      };
    }
    return { ...last, clients };
  };
  await status();
  await Promise.race([banner.promise, Bun.sleep(2000)]);
  last = null;
  await status();

  const server = tls.createServer({ ...identity, minVersion: "TLSv1.3" }, (socket) => {
    const peer = `${socket.remoteAddress}:${socket.remotePort}`;
    socket.on("error", () => socket.destroy());
    const reader = new ExactReader(socket);
    // A client that sends nothing is dropped, so a stalled peer holds no connection open.
    const idle = setTimeout(() => socket.destroy(), 10_000);
    void reader.read(OPENING_BYTES).then(
      async (bytes) => {
        clearTimeout(idle);
        const keying = keyingOf(socket);
        const request = checkOpening(opts.secret, bytes, keying);
        if (request === null) {
          opts.log(`refused a connection from ${peer}: it did not prove the secret`);
          socket.end(Buffer.of(ANSWER.refused));
          return;
        }
        socket.write(Buffer.concat([Buffer.of(ANSWER.ok), proof(opts.secret, "worker", keying)]));
        if (request === REQUEST.status) {
          const answer = await status().catch((e: Error): WorkerStatus => ({ protocol: "", devices: [], clients, error: `its rpc-server does not answer (${e.message})` }));
          const body = Buffer.from(JSON.stringify(answer));
          const size = Buffer.alloc(4);
          size.writeUInt32BE(body.length);
          socket.end(Buffer.concat([size, body]));
          return;
        }
        const upstream = net.connect({ host: "127.0.0.1", port: rpcPort });
        clients++;
        opts.log(`serving ${peer}`);
        let counted = true;
        const done = () => {
          if (counted) {
            counted = false;
            clients--;
            opts.log(`${peer} disconnected`);
          }
          upstream.destroy();
          socket.destroy();
        };
        upstream.setNoDelay(true);
        upstream.on("error", done);
        upstream.on("close", done);
        socket.on("close", done);
        const rest = reader.rest();
        if (rest.length) upstream.write(rest);
        socket.pipe(upstream);
        upstream.pipe(socket);
        socket.resume();
      },
      () => {
        clearTimeout(idle);
        socket.destroy();
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (e) => reject(new EngineConfigError(`lemonade worker cannot listen on ${opts.host}:${opts.port}: ${e.message}`)));
    server.listen(opts.port, opts.host, () => resolve());
  }).catch((err) => {
    stopChild();
    throw err;
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    pid: child.pid,
    exited: child.exited,
    status,
    async stop() {
      server.close();
      child.kill("SIGTERM");
      await child.exited;
      process.off("exit", stopChild);
    },
  };
}
