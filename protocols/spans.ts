// The spans channel (WS /spans/stream, also /traces/stream): finished spans as JSON, one message
// each, to the connections allowed to see them. As Lemonade's server rules it:
// - with LEMONADE_API_KEY set, a connection may upgrade without a key (the only socket that may)
//   and authenticate afterwards with `{"type": "auth", "token" | "api_key": KEY, "client_session_id"?}`,
//   answered `auth.ok` or an `invalid_request_error` event; a key presented at upgrade must be valid;
// - the admin key (LEMONADE_ADMIN_API_KEY, else LEMONADE_API_KEY: the admin fallback) sees every span;
// - another key sees the spans of requests made with that same key;
// - on a server without LEMONADE_API_KEY, a guest sees the spans of keyless requests that carried
//   its own client session id (`?client_session_id=` or the auth message's): the ephemeral
//   session token a page draws for itself, so two pages never see each other's spans;
// - the hash of the caller's key is removed from every span sent.
import { AUTH_TOKEN_HASH_ATTRIBUTE, CLIENT_SESSION_ID_ATTRIBUTE, hashToken, stringAttribute, type SpanEvent } from "../observability/span-bus.ts";
import { asJson } from "../lib/json.ts";

export interface ChannelKeys {
  apiKey: string | null;
  adminApiKey: string | null;
}

/** The event a refused or malformed message is answered with. */
export interface ChannelError {
  type: "error";
  error: { message: string; type: "invalid_request_error" };
}

export type ChannelReply = { type: "auth.ok" } | ChannelError;

const refusal = (message: string): ChannelError => ({ type: "error", error: { message, type: "invalid_request_error" } });

const stripBearer = (token: string) => (token.startsWith("Bearer ") ? token.slice("Bearer ".length) : token);

/** The key that opens everything: the admin key, or the API key when no admin key is set. */
const adminKeyOf = (keys: ChannelKeys) => keys.adminApiKey ?? keys.apiKey;

/** Whether a key is accepted: any key when LEMONADE_API_KEY is unset, else the API or admin key. */
function accepted(keys: ChannelKeys, token: string): boolean {
  if (keys.apiKey === null) return true;
  return token === keys.apiKey || (keys.adminApiKey !== null && token === keys.adminApiKey);
}

export class SpansConnection {
  private authenticated: boolean;
  private token: string;
  private tokenHash: string;
  private clientSessionId: string;

  constructor(
    private readonly keys: ChannelKeys,
    token: string | null,
    clientSessionId: string | null,
  ) {
    this.token = token === null ? "" : stripBearer(token);
    this.tokenHash = hashToken(this.token);
    this.clientSessionId = clientSessionId ?? "";
    // An upgrade with a refused key never gets here: the route's access class (`telemetry`) refuses it.
    this.authenticated = keys.apiKey === null || token !== null;
  }

  get isAuthenticated(): boolean {
    return this.authenticated;
  }

  /** A client message: `auth` (re-)authenticates; nothing else is asked of this channel. */
  handle(raw: unknown): ChannelReply {
    let message: unknown = raw;
    try {
      if (typeof raw === "string") message = JSON.parse(raw);
    } catch (err) {
      return refusal(`Invalid JSON: ${(err as Error).message}`);
    }
    const fields = asJson(message);
    const type = typeof fields.type === "string" ? fields.type : "";
    if (type === "auth") {
      const given = typeof fields.token === "string" && fields.token !== "" ? fields.token : typeof fields.api_key === "string" ? fields.api_key : "";
      const token = stripBearer(given);
      if (!accepted(this.keys, token)) return refusal("Invalid API key");
      this.token = token;
      this.tokenHash = hashToken(token);
      this.authenticated = true;
      if (typeof fields.client_session_id === "string") this.clientSessionId = fields.client_session_id;
      return { type: "auth.ok" };
    }
    if (!this.authenticated) return refusal("Unauthorized. Please authenticate first by sending an auth message.");
    return refusal(`Unknown message type: ${type}`);
  }

  /** The span as this connection may receive it (without the caller's key hash), or null when
   * it is not this connection's to see. */
  view(span: SpanEvent): SpanEvent | null {
    if (!this.authenticated) return null;
    const spanTokenHash = stringAttribute(span, AUTH_TOKEN_HASH_ATTRIBUTE);
    const adminKey = adminKeyOf(this.keys);
    const isAdmin = adminKey !== null && this.token === adminKey;
    const sameKey = spanTokenHash !== "" && spanTokenHash === this.tokenHash;
    if (!isAdmin && !sameKey) {
      const guestAllowed = spanTokenHash === "" && this.keys.apiKey === null;
      const spanSession = stringAttribute(span, CLIENT_SESSION_ID_ATTRIBUTE);
      if (!guestAllowed || this.clientSessionId === "" || spanSession !== this.clientSessionId) return null;
    }
    return { ...span, attributes: (span.attributes ?? []).filter((a) => a.key !== AUTH_TOKEN_HASH_ATTRIBUTE) };
  }
}
