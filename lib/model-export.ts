// A model's definition as the /v1/pull body that re-creates it elsewhere: what `lemonade export`
// writes and the web app's Export downloads. It imports nothing, so the web app's bundle can carry it.

/** The name an exported model registers under: `/v1/pull` registers user models only, so the
 * model's bare name (its canonical id without the source) under `user.`. */
const userName = (m: { id: string; canonical_id?: string }) => `user.${String(m.canonical_id ?? m.id).replace(/^(user|extra|builtin)\./, "")}`;

/** The /v1/pull body for `m` as GET /v1/models/{id} answers it (POST-able as it is): a collection
 * carries each component's definition, and a router its policy with the schema version /v1/pull
 * requires. */
export function exportBody(m: any): Record<string, unknown> {
  if ((m.recipe === "collection.omni" || m.recipe === "collection.router") && m.components?.length) {
    // Each definition under the name the collection lists it by, so an import matches them up.
    const models = (m.models ?? []).flatMap((d: any, i: number) => (d ? [{ ...exportBody(d), model_name: m.components[i] }] : []));
    return {
      model_name: userName(m),
      recipe: m.recipe,
      components: m.components,
      models,
      ...(m.routing ? { version: m.version, routing: m.routing } : {}),
      ...(m.system_prompt ? { system_prompt: m.system_prompt } : {}),
    };
  }
  const body: Record<string, unknown> = { model_name: userName(m), recipe: m.recipe, checkpoints: m.checkpoints, labels: m.labels };
  if (m.size !== undefined) body.size = m.size;
  if (m.recipe_options && Object.keys(m.recipe_options).length) body.recipe_options = m.recipe_options;
  return body;
}
