// LEMONADE_HOST as Lemonade accepts it: `host`, `host:port`, `[v6]:port` or `http(s)://host:port`.

export interface HostSpec {
  host: string;
  port?: number;
}

export function parseHostSpec(raw: string): HostSpec {
  let rest = raw.trim().replace(/^https?:\/\//i, "").replace(/\/.*$/, "");
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(rest);
  if (v6) return { host: v6[1]!, ...(v6[2] ? { port: Number(v6[2]) } : {}) };
  const m = /^([^:]+):(\d+)$/.exec(rest);
  if (m) return { host: m[1]!, port: Number(m[2]) };
  return { host: rest };
}
