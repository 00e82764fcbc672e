// Cloud providers' keys (lemonade.md § cloud/auth): set in memory, or cleared. Installing and
// removing a provider is /v1/install and /v1/uninstall with `backend: "cloud"` (spec/backends.ts).
import { Type as T } from "@sinclair/typebox";
import { endpoint } from "./endpoint.ts";
import { E } from "./errors.ts";
import { AuthState, CloudWarnings } from "./backends.ts";

export const cloudAuth = endpoint({
  id: "lemonade.cloud_auth",
  method: "POST",
  path: "/cloud/auth",
  mount: "versioned",
  page: "lemonade",
  // The 409 body lemonade.md shows is `{"error": {"type": "auth_conflict", "env_var", "message"}}`.
  errorStyle: "openai",
  access: "admin",
  summary: "Set a cloud provider's key",
  availability: "fully_available",
  description:
    "Holds an API key for an installed provider in the server's memory (never written to disk, logged or answered back; gone on restart) and reads the provider's models again with it. `LEMONADE_<PROVIDER>_API_KEY` in the server's environment takes precedence: then nothing is stored and the answer is 409.",
  body: T.Object({
    provider: T.String({ minLength: 1, description: "Installed provider name." }),
    api_key: T.String({ minLength: 1, description: "The key, held in memory only." }),
    allow_insecure_http: T.Optional(T.Boolean({ description: "`true` lets the key travel to the provider's `http://` base URL; kept with the provider." })),
  }),
  response: T.Object({
    provider: T.String(),
    allow_insecure_http: T.Boolean({ description: "Whether the key may travel to the provider's `http://` base URL, as saved" }),
    auth_state: AuthState,
    models_discovered: T.Integer({ description: "Models the provider lists with the key" }),
    ...CloudWarnings,
  }),
  errors: [
    E.authConflict,
    E.providerNotFound,
    E.insecureHttp,
  ],
  example: {
    body: { provider: "fireworks", api_key: "fw-XXXXX" },
    response: '{"provider": "fireworks", "allow_insecure_http": false, "auth_state": {"env_var_set": false, "runtime_key_set": true}, "models_discovered": 12}',
  },
});

export const cloudAuthClear = endpoint({
  id: "lemonade.cloud_auth_clear",
  method: "DELETE",
  path: "/cloud/auth/:provider",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "openai",
  access: "admin",
  summary: "Clear a cloud provider's key",
  availability: "fully_available",
  description:
    "Forgets the in-memory keys of a provider (its own, and its pool members' given at install); a key from the environment stays in effect. Without one, the provider's models are read again without a key, so a provider that needs one lists none. A provider that is not installed held no key: `cleared_runtime_key` is `false`, as Lemonade answers.",
  params: T.Object({ provider: T.String({ description: "Installed provider name." }) }),
  response: T.Object({
    provider: T.String(),
    cleared_runtime_key: T.Boolean({ description: "`false` when no in-memory key was held" }),
    auth_state: AuthState,
  }),
  example: {
    path: "/v1/cloud/auth/fireworks",
    response: '{"provider": "fireworks", "cleared_runtime_key": true, "auth_state": {"env_var_set": false, "runtime_key_set": false}}',
  },
});
