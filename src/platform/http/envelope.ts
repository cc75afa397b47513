/**
 * The success envelope of one resource whose JSON is already serialised (a cached projection):
 * spliced in as text, never parsed and serialised again.
 */
export function resourceEnvelope(json: string, meta: Readonly<Record<string, unknown>>): string {
  return `{"success":true,"data":${json},"meta":${JSON.stringify(meta)}}`;
}
