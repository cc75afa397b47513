// Who runs the embedded PostgreSQL, and whether it can reach what it needs. PostgreSQL refuses to
// run as root, so as root it runs as the OS user `postgres`, which must enter every directory on
// the way to its binaries (in node_modules) and to DATA_DIR. Plain JavaScript, so that
// scripts/check-data-dir.mjs applies this rule before the build (a clone under /root would
// otherwise fail only after it) and embedded-postgres.ts applies it again when the server starts.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { dirname, resolve } from 'node:path';

/** The uid and gid the embedded PostgreSQL runs as; undefined when not root (it runs as this process). */
export function serverUser() {
  if (userInfo().uid !== 0) return undefined;
  const passwd = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((line) => line.startsWith('postgres:'));
  if (passwd === undefined) {
    throw new Error(
      'running as root needs an OS user named "postgres" for the embedded PostgreSQL (or set DATABASE_URL)',
    );
  }
  const [, , uid, gid] = passwd.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

/** Whether `user` can reach `file` (every directory above it open to that user, the file itself too). */
function reachable(file, user) {
  return new Promise((done) => {
    execFile('/bin/sh', ['-c', 'test -x "$0"', file], user, (error) => done(error === null));
  });
}

/**
 * The outermost directory on the way to `target` that `user` cannot enter, or undefined when it
 * can reach `target`. A target not created yet is judged by its nearest existing directory.
 */
export async function closedDirectory(target, user) {
  let existing = resolve(target);
  while (!existsSync(existing) && existing !== dirname(existing)) existing = dirname(existing);
  if (await reachable(existing, user)) return undefined;
  let closed = existing;
  for (let dir = dirname(existing); dir !== dirname(dir); dir = dirname(dir)) {
    if (!(await reachable(dir, user))) closed = dir;
  }
  return closed;
}

/** The one line said when `closed` keeps the postgres OS user out, with what to do. */
export function closedMessage(closed) {
  return (
    `embedded PostgreSQL runs as the OS user "postgres" (it refuses root), and that user cannot enter ${closed}: ` +
    `run \`chmod o+x ${closed}\`, or clone the project where others can enter, or run as a non-root user, or set DATABASE_URL`
  );
}
