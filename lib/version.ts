// The server's own version, from package.json, reported by /v1/health and /metrics.
import pkg from "../package.json" with { type: "json" };

export const VERSION: string = pkg.version;
