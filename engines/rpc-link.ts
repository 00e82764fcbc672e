// The link between this server and its RPC workers (`lemonade worker`): llama.cpp's rpc-server
// speaks an unauthenticated protocol, so its port only ever listens on loopback, and the two ends
// of this project carry it over TLS. Each TLS connection starts with a mutual proof of the shared
// secret bound to that TLS session (an HMAC over its exported keying material), so the secret is
// never sent, a recorded proof is worthless on another session, and a relay in the middle (two TLS
// sessions, two keying materials) cannot pass one on. Only after the proof does the worker open
// its loopback connection to rpc-server: a wrong secret never reaches it.
import net from "node:net";
import tls from "node:tls";
import { createHmac, timingSafeEqual } from "node:crypto";
import { RpcWorkerError, type WorkerAddress, type WorkerStatus } from "./rpc-address.ts";

const MAGIC = Buffer.from("LRPC1");
export const REQUEST = { status: 0x53, tunnel: 0x54 } as const;
export const ANSWER = { ok: 0, refused: 1 } as const;
const PROOF_BYTES = 32;
/** The client's opening: magic, request, proof. */
export const OPENING_BYTES = MAGIC.length + 1 + PROOF_BYTES;

/** The proof one end gives of the secret on this TLS session. */
export function proof(secret: string, role: "server" | "worker", keying: Buffer): Buffer {
  return createHmac("sha256", secret).update(`lemonade-rpc ${role}\0`).update(keying).digest();
}

/** TLS keying material both ends of one session share (RFC 5705), and nobody else. */
export const keyingOf = (socket: tls.TLSSocket): Buffer => socket.exportKeyingMaterial(32, "EXPORTER-lemonade-rpc", Buffer.alloc(0));

export function opening(secret: string, request: number, keying: Buffer): Buffer {
  return Buffer.concat([MAGIC, Buffer.of(request), proof(secret, "server", keying)]);
}

/** The request a client's opening makes, or null when it does not prove the secret. */
export function checkOpening(secret: string, bytes: Buffer, keying: Buffer): number | null {
  if (bytes.length !== OPENING_BYTES || !bytes.subarray(0, MAGIC.length).equals(MAGIC)) return null;
  const request = bytes[MAGIC.length]!;
  const given = bytes.subarray(MAGIC.length + 1);
  if (!timingSafeEqual(given, proof(secret, "server", keying))) return null;
  return request === REQUEST.status || request === REQUEST.tunnel ? request : null;
}

/** Reads exact byte counts off a socket during a handshake; what arrives past them stays
 * buffered for `rest()`, so that no byte of the stream after the handshake is lost. */
export class ExactReader {
  private buffered = Buffer.alloc(0);
  private wanted: { n: number; resolve: (b: Buffer) => void; reject: (e: Error) => void } | null = null;
  private ended: Error | null = null;
  private readonly onData = (chunk: Buffer) => {
    this.buffered = Buffer.concat([this.buffered, chunk]);
    this.settle();
  };
  private readonly onEnd = () => {
    this.ended = new Error("the connection closed");
    this.settle();
  };

  constructor(private readonly socket: net.Socket) {
    socket.on("data", this.onData);
    socket.on("end", this.onEnd);
    socket.on("close", this.onEnd);
    socket.on("error", (e) => {
      this.ended = e;
      this.settle();
    });
  }

  private settle(): void {
    const w = this.wanted;
    if (!w) return;
    if (this.buffered.length >= w.n) {
      this.wanted = null;
      const out = this.buffered.subarray(0, w.n);
      this.buffered = this.buffered.subarray(w.n);
      w.resolve(out);
    } else if (this.ended) {
      this.wanted = null;
      w.reject(this.ended);
    }
  }

  read(n: number): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      this.wanted = { n, resolve, reject };
      this.settle();
    });
  }

  /** Stops reading; returns what arrived beyond the reads. */
  rest(): Buffer {
    this.socket.pause();
    this.socket.off("data", this.onData);
    this.socket.off("end", this.onEnd);
    this.socket.off("close", this.onEnd);
    return this.buffered;
  }
}

const withTimeout = <T>(p: Promise<T>, ms: number, what: () => Error): Promise<T> =>
  new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(what()), ms);
    p.then(
      (v) => (clearTimeout(timer), resolve(v)),
      (e) => (clearTimeout(timer), reject(e)),
    );
  });

/** Opens a TLS connection to a worker and completes the mutual proof; `request` says what for. */
async function connectWorker(address: WorkerAddress, secret: string, request: number, timeoutMs: number): Promise<{ socket: tls.TLSSocket; reader: ExactReader }> {
  const name = address.text;
  let socket: tls.TLSSocket | undefined;
  const attempt = async () => {
    // The worker's certificate is self-signed: who it is, is proven by the secret, below.
    socket = tls.connect({ host: address.host, port: address.port, rejectUnauthorized: false, minVersion: "TLSv1.3" });
    const s = socket;
    await new Promise<void>((resolve, reject) => {
      s.once("secureConnect", resolve);
      s.once("error", (e) => reject(new RpcWorkerError(name, `rpc worker ${name} is unreachable (${(e as NodeJS.ErrnoException).code ?? e.message})`)));
    });
    const keying = keyingOf(s);
    const reader = new ExactReader(s);
    s.write(opening(secret, request, keying));
    const answer = await reader.read(1).catch(() => {
      throw new RpcWorkerError(name, `rpc worker ${name} closed the connection during the handshake (is it a lemonade worker?)`);
    });
    if (answer[0] === ANSWER.refused) throw new RpcWorkerError(name, `rpc worker ${name} refused the secret (LEMONADE_RPC_SECRET or llamacpp.rpc_secret must match the worker's)`);
    const theirs = await reader.read(PROOF_BYTES).catch(() => {
      throw new RpcWorkerError(name, `rpc worker ${name} closed the connection during the handshake`);
    });
    if (answer[0] !== ANSWER.ok || !timingSafeEqual(theirs, proof(secret, "worker", keying))) {
      throw new RpcWorkerError(name, `rpc worker ${name} did not prove the secret (not a lemonade worker, or one with another secret)`);
    }
    return { socket: s, reader };
  };
  try {
    return await withTimeout(attempt(), timeoutMs, () => new RpcWorkerError(name, `rpc worker ${name} did not complete its handshake in ${timeoutMs} ms`));
  } catch (err) {
    socket?.destroy();
    throw err;
  }
}

/** One health check: TCP, TLS, the proof, and the worker's rpc-server status (its HELLO). */
export async function probeWorker(address: WorkerAddress, secret: string, timeoutMs = 3000): Promise<WorkerStatus> {
  const { socket, reader } = await connectWorker(address, secret, REQUEST.status, timeoutMs);
  try {
    const read = async () => {
      const size = (await reader.read(4)).readUInt32BE(0);
      return JSON.parse((await reader.read(size)).toString("utf8")) as WorkerStatus;
    };
    return await withTimeout(read(), timeoutMs, () => new RpcWorkerError(address.text, `rpc worker ${address.text} did not report its status in ${timeoutMs} ms`));
  } catch (err) {
    if (err instanceof RpcWorkerError) throw err;
    throw new RpcWorkerError(address.text, `rpc worker ${address.text} sent no status: ${(err as Error).message}`);
  } finally {
    socket.destroy();
  }
}

/** A loopback port llama-server's `--rpc` connects to, carried to one worker over TLS. */
export interface Tunnel {
  readonly address: WorkerAddress;
  readonly port: number;
  /** Bytes carried each way so far (the bench's bytes per token). */
  readonly bytes: { sent: number; received: number };
  /** Stops taking new connections, keeping those open: once llama-server holds its connection,
   * no other local process may reach the worker through this port. */
  seal(): void;
  close(): void;
}

/** Opens a tunnel; each connection llama-server makes to it becomes one TLS connection to the
 * worker. When a worker's side drops, llama-server's side is dropped too, so that the engine
 * fails at once (llama.cpp aborts on a lost RPC connection) instead of waiting on a dead peer. */
export async function openTunnel(address: WorkerAddress, secret: string, timeoutMs = 5000, onLost: (why: string) => void = () => {}): Promise<Tunnel> {
  const bytes = { sent: 0, received: 0 };
  const open = new Set<net.Socket>();
  let closing = false;
  const server = net.createServer({ noDelay: true }, (local) => {
    open.add(local);
    local.pause();
    local.on("close", () => open.delete(local));
    local.on("error", () => local.destroy());
    connectWorker(address, secret, REQUEST.tunnel, timeoutMs).then(
      ({ socket, reader }) => {
        open.add(socket);
        socket.setNoDelay(true);
        socket.setKeepAlive(true, 1000);
        const rest = reader.rest();
        if (rest.length) {
          bytes.received += rest.length;
          local.write(rest);
        }
        socket.on("data", (d: Buffer) => void (bytes.received += d.length));
        local.on("data", (d: Buffer) => void (bytes.sent += d.length));
        socket.pipe(local);
        local.pipe(socket);
        socket.resume();
        local.resume();
        const drop = (why: string) => {
          if (!closing && !local.destroyed) onLost(why);
          socket.destroy();
          local.destroy();
        };
        socket.on("close", () => drop(`rpc worker ${address.text} closed the connection`));
        socket.on("error", (e) => drop(`rpc worker ${address.text}: ${e.message}`));
        local.on("close", () => socket.destroy());
      },
      (err: Error) => {
        if (!closing) onLost(err.message);
        local.destroy();
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  return {
    address,
    port: (server.address() as net.AddressInfo).port,
    bytes,
    seal() {
      server.close();
    },
    close() {
      closing = true;
      server.close();
      for (const s of open) s.destroy();
    },
  };
}
