/**
 * Who holds a grant or an authority (v1.3): a user, or a group (every member it reaches). A body
 * names exactly one (`OneOf` validates that before this reads it).
 */
export type Holder =
  | { readonly user_id: number; readonly group_id?: undefined }
  | { readonly user_id?: undefined; readonly group_id: number };

/** The holder a validated body names. */
export function holderOf(body: { readonly user_id?: number; readonly group_id?: number }): Holder {
  return body.group_id === undefined ? { user_id: body.user_id ?? 0 } : { group_id: body.group_id };
}

/** `User 4` or `Group 7`, for messages. */
export function holderName(holder: Holder): string {
  return holder.group_id === undefined ? `User ${holder.user_id}` : `Group ${holder.group_id}`;
}
