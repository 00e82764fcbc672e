// Model aliases (/internal/aliases): each binds a name to a model, kept in aliases.json.
import { E } from "../spec/errors.ts";
import type { AliasDeleteResponse, AliasesListResponse, AliasSetRequest, AliasSetResponse } from "../spec/internal.ts";
import { ApiError } from "../lib/api-error.ts";
import { clip } from "../lib/scrub.ts";
import { GGUF_RECIPE } from "../spec/recipes.ts";
import type { ServerContext } from "../runtime/context.ts";

/** GET /internal/aliases: each alias with what its target is now. A target the catalog does not
 * know (yet) is reported as Lemonade reports it: not downloaded, and the GGUF recipe. */
export function listAliases(ctx: Pick<ServerContext, "aliases" | "catalog">): AliasesListResponse {
  return {
    aliases: ctx.aliases.list().map(({ alias, target }) => {
      const model = ctx.catalog.find(target);
      return { alias, target, downloaded: model ? ctx.catalog.isDownloaded(model) : false, recipe: model?.recipe ?? GGUF_RECIPE };
    }),
  };
}

const RESERVED_PREFIXES = ["user.", "extra.", "builtin."];

/** POST /internal/aliases: `target` (or `model`) is the model the alias names. Refused, in
 * Lemonade's words, when it names itself, takes a prefix the catalog owns, or is a model's own name
 * (an extra model's bare name it may take). */
export function setAlias(ctx: Pick<ServerContext, "aliases" | "catalog" | "logger">, body: AliasSetRequest): AliasSetResponse {
  const target: string | undefined = body.target ?? body.model;
  if (!target) throw ApiError.of(E.missingArgument, "Missing required argument 'target'", "target");
  if (body.alias === target) throw ApiError.of(E.aliasInvalid, "Alias cannot point to itself", "alias");
  if (RESERVED_PREFIXES.some((p) => body.alias.startsWith(p))) {
    throw ApiError.of(E.aliasInvalid, "Alias name cannot use reserved prefixes (user., extra., builtin.)", "alias");
  }
  const named = ctx.aliases.has(body.alias) ? undefined : ctx.catalog.find(body.alias);
  if (named && (named.id === body.alias || named.id === `user.${body.alias}`)) {
    throw ApiError.of(E.aliasConflict, `Cannot create alias '${clip(body.alias)}': Name conflicts with an existing canonical model`, "alias");
  }
  ctx.aliases.set(body.alias, target);
  ctx.logger.info("Server", `Alias ${body.alias} -> ${target}`);
  return { status: "ok", alias: body.alias, target };
}

/** DELETE /internal/aliases/:alias. */
export function removeAlias(ctx: Pick<ServerContext, "aliases" | "logger">, alias: string): AliasDeleteResponse {
  if (!ctx.aliases.remove(alias)) {
    throw ApiError.of(E.aliasNotFound, `Alias not found: ${clip(alias)}`, "alias");
  }
  ctx.logger.info("Server", `Alias ${alias} removed`);
  return { status: "deleted", alias };
}
