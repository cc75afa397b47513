export interface ServerUser {
  readonly uid: number;
  readonly gid: number;
}

/** The uid and gid the embedded PostgreSQL runs as; undefined when not root (it runs as this process). */
export function serverUser(): ServerUser | undefined;

/**
 * The outermost directory on the way to `target` that `user` cannot enter, or undefined when it
 * can reach `target`. A target not created yet is judged by its nearest existing directory.
 */
export function closedDirectory(target: string, user: ServerUser): Promise<string | undefined>;

/** The one line said when `closed` keeps the postgres OS user out, with what to do. */
export function closedMessage(closed: string): string;
