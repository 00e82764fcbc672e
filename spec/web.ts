// The web app and the offline API reference's files: served by the server itself, open to every
// caller (the app then sends the API key the user gives it).
import { Type as T } from "@sinclair/typebox";
import { endpoint } from "./endpoint.ts";
import { E } from "./errors.ts";

export const webApp = endpoint({
  id: "lemonade.web_app",
  method: "GET",
  path: "/",
  mount: "root",
  aliasPaths: ["/app", "/status"],
  page: "lemonade",
  errorStyle: "lemonade",
  access: "open",
  summary: "The web app",
  availability: "fully_available",
  description:
    "The built-in app: chat (conversations kept in the browser), the model manager (downloads, options), downloads, compare, a live dashboard, backends, logs, settings typed from `/internal/config/schema` and try-it panels for speech, transcription, embeddings, reranking and images. Its files come from this server alone, and it talks to the server only through this API; when `LEMONADE_API_KEY` is set, the page asks for the key and keeps it in the browser. `?model=NAME` opens the chat with that model.",
  contentType: "text/html; charset=utf-8",
  head: true,
});

export const webAsset = endpoint({
  id: "lemonade.web_asset",
  method: "GET",
  path: "/app/assets/:file",
  mount: "root",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "open",
  summary: "The web app's files",
  availability: "fully_available",
  description: "The web app's script and stylesheet (`app.js`, `app.css`).",
  params: T.Object({ file: T.String({ description: "`app.js` or `app.css`." }) }),
  contentType: "text/javascript",
  errors: [E.fileNotFound],
});

export const docsAsset = endpoint({
  id: "lemonade.docs_asset",
  method: "GET",
  path: "/docs/assets/:file",
  mount: "root",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "open",
  summary: "The API reference viewer's files",
  availability: "fully_available",
  description:
    "Swagger UI (from npm, part of the single executable), so that `/docs` works without internet, and the markdown reference pages as HTML (`openai.html`, `lemonade.html`, ...), linked from `/docs`.",
  params: T.Object({ file: T.String({ description: "`swagger-ui-bundle.js`, `swagger-ui.css`, `init.js`, or a page: `<page>.html`." }) }),
  contentType: "text/javascript",
  errors: [E.fileNotFound],
});
