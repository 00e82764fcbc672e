// The dashboard's RPC workers (`llamacpp.rpc_workers`, from /v1/system-info): each one's state,
// its devices with their free memory as its rpc-server reports them, and whether it serves a
// model now. Nothing shows when no worker is configured.
import { getJson } from "./api.ts";
import { usePoll } from "./hooks.ts";

type Worker = {
  address: string;
  state: "checking" | "ready" | "unavailable";
  error?: string;
  busy: boolean;
  devices: { name: string; description: string; free_bytes: number; total_bytes: number }[];
};

const gib = (b: number) => `${(b / 2 ** 30).toFixed(1)} GiB`;

export function RpcWorkerList() {
  const info = usePoll(() => getJson("/v1/system-info"), 5000);
  const workers = (info.data?.rpc_workers ?? []) as Worker[];
  if (!workers.length) return null;
  return (
    <>
      <h3>RPC workers</h3>
      <ul class="rpc-workers">
        {workers.map((w) => (
          <li key={w.address} data-worker={w.address}>
            <strong>{w.address}</strong> {w.state === "ready" ? (w.busy ? "serving a model" : "ready") : w.state}
            {w.error ? <span class="error"> {w.error}</span> : null}
            {w.devices.map((d) => (
              <span key={d.name} class="hint" title={d.description}>
                {" "}
                {d.name}: {gib(d.free_bytes)} free of {gib(d.total_bytes)}
              </span>
            ))}
          </li>
        ))}
      </ul>
    </>
  );
}
