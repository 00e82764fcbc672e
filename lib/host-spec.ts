// LEMONADE_HOST and the CLI's --host as Lemonade accepts them: `host`, `host:port`, `[v6]:port` or
// `http(s)://host[:port][/path]` (the path is dropped; a scheme with no port means its own, 80 or 443).

export interface HostSpec {
  host: string;
  port?: number;
  /** Given as `https://`. */
  ssl?: boolean;
  /** The port the scheme implies when the spec gives none. */
  schemePort?: number;
}

export function parseHostSpec(raw: string): HostSpec {
  const scheme = /^(https?):\/\//i.exec(raw.trim())?.[1]?.toLowerCase();
  const rest = raw.trim().replace(/^https?:\/\//i, "").replace(/[/?#].*$/, "");
  const ssl = scheme === "https";
  const implied = scheme ? { ssl, schemePort: ssl ? 443 : 80 } : {};
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(rest);
  if (v6) return { host: v6[1]!, ...(v6[2] ? { port: Number(v6[2]) } : {}), ...implied };
  const m = /^([^:]+):(\d+)$/.exec(rest);
  if (m) return { host: m[1]!, port: Number(m[2]), ...implied };
  return { host: rest, ...implied };
}
