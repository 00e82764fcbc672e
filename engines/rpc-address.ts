// What the server knows of its RPC workers without talking to one: their addresses, the protocol
// version they must speak, and why a status rules one out. Kept apart from engines/rpc-link.ts so
// that a server with no workers never loads node:tls (about 3 MB of resident memory; bench memory).
import { EngineConfigError } from "./engine.ts";

/** The RPC protocol of the pinned llama.cpp (ggml/include/ggml-rpc.h `RPC_PROTO_*_VERSION`): a
 * worker must have the same major version and a minor one no newer, as llama.cpp's own HELLO
 * check demands (a mismatch there aborts llama-server mid-load). */
export const RPC_PROTOCOL = { major: 6, minor: 0 } as const;

/** A worker named as `host:port` (`[v6]:port` for an IPv6 address). */
export interface WorkerAddress {
  host: string;
  port: number;
  /** As configured, the worker's name in messages. */
  text: string;
}

/** A worker that cannot be used for a load: not an address, unreachable, a wrong secret, another
 * protocol version, busy with another client. The message names the worker, never the secret. */
export class RpcWorkerError extends EngineConfigError {
  constructor(
    readonly worker: string,
    message: string,
  ) {
    super(message);
  }
}

export function parseWorkerAddress(text: string): WorkerAddress {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)):(\d{1,5})$/.exec(text.trim());
  const port = Number(m?.[3]);
  if (!m || !(port >= 1 && port <= 65535)) {
    throw new RpcWorkerError(text, `rpc worker '${text}' is not host:port (such as 192.168.1.20:50052, or [fe80::1]:50052)`);
  }
  return { host: m[1] ?? m[2]!, port, text: text.trim() };
}

/** What a worker reports of its rpc-server: the protocol version its HELLO answered and each
 * device with its memory, as rpc-server reports them (free capped by the worker's memory limit). */
export interface WorkerStatus {
  protocol: string;
  devices: { name: string; description: string; free: number; total: number }[];
  /** Connections rpc-server is serving now: it serves one client at a time. */
  clients: number;
  /** Why the worker could not ask its rpc-server. */
  error?: string;
}

/** Why a worker's status rules it out of a load, or null. `busy`: whether a worker serving
 * another client counts (not before the load queues: the client may be the engine this load
 * replaces, stopped only once the load's turn comes). */
export function statusProblem(address: WorkerAddress, status: WorkerStatus, busy = true): string | null {
  if (status.error) return `rpc worker ${address.text}: ${status.error}`;
  const [major, minor] = status.protocol.split(".").map(Number);
  if (major !== RPC_PROTOCOL.major || !(minor! <= RPC_PROTOCOL.minor)) {
    return `rpc worker ${address.text} runs RPC protocol ${status.protocol} and this server's llama.cpp speaks ${RPC_PROTOCOL.major}.${RPC_PROTOCOL.minor}.x: run the same lemonade version on both`;
  }
  if (busy && status.clients > 0) return `rpc worker ${address.text} is serving another model (rpc-server serves one client at a time)`;
  if (!status.devices.length) return `rpc worker ${address.text} has no devices`;
  return null;
}
