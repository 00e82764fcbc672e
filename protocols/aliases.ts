// Model aliases (/internal/aliases): each binds a name to a model, kept in aliases.json.
import { E } from "../spec/errors.ts";
import type { AliasDeleteResponse, AliasesListResponse, AliasSetRequest, AliasSetResponse } from "../spec/internal.ts";
import { ApiError } from "../lib/api-error.ts";
import type { ServerContext } from "../runtime/context.ts";

/** GET /internal/aliases: each alias with what its target is now. */
export function listAliases(ctx: Pick<ServerContext, "aliases" | "catalog">): AliasesListResponse {
  return {
    aliases: ctx.aliases.list().map(({ alias, target }) => {
      const model = ctx.catalog.find(target);
      return { alias, target, downloaded: model ? ctx.catalog.isDownloaded(model) : false, recipe: model?.recipe ?? null };
    }),
  };
}

/** POST /internal/aliases: `target` (or `model`) is the model the alias names. */
export function setAlias(ctx: Pick<ServerContext, "aliases" | "logger">, body: AliasSetRequest): AliasSetResponse {
  const target: string | undefined = body.target ?? body.model;
  if (!target) throw ApiError.of(E.missingArgument, "Missing required argument 'target'", "target");
  ctx.aliases.set(body.alias, target);
  ctx.logger.info("Server", `Alias ${body.alias} -> ${target}`);
  return { status: "ok", alias: body.alias, target };
}

/** DELETE /internal/aliases/:alias. */
export function removeAlias(ctx: Pick<ServerContext, "aliases" | "logger">, alias: string): AliasDeleteResponse {
  if (!ctx.aliases.remove(alias)) {
    throw ApiError.of(E.aliasNotFound, `Alias '${alias}' does not exist`, "alias");
  }
  ctx.logger.info("Server", `Alias ${alias} removed`);
  return { status: "deleted", alias };
}
