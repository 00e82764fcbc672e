// The API key a request presents in its headers: a Bearer token, else `x-api-key`. Auth checks it
// (http/auth.ts); tracing ties a span to its caller by its hash (observability/telemetry.ts).

export function headerApiKey(headers: Headers): string | null {
  const auth = headers.get("authorization");
  if (auth) {
    const m = /^Bearer\s+(.+)$/i.exec(auth.trim());
    if (m) return m[1]!;
  }
  return headers.get("x-api-key");
}
