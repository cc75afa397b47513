// REDIS_URL names one server (`redis://`, `rediss://`) or a cluster by some of its nodes.

/** `redis+cluster://[user:password@]host:port,host:port` (or `rediss+cluster://` for TLS). */
export function isClusterUrl(url: string): boolean {
  return /^rediss?\+cluster:\/\//.test(url);
}

/** The root nodes and credentials of a cluster URL; undefined when it is not one. */
export function parseClusterUrl(
  url: string,
): { nodes: { host: string; port: number }[]; username?: string; password?: string; tls: boolean } | undefined {
  const match = /^(rediss?)\+cluster:\/\/(?:([^:@/]*)(?::([^@/]*))?@)?([^/?#@]+)\/?$/.exec(url);
  if (match === null) return undefined;
  const nodes: { host: string; port: number }[] = [];
  for (const address of (match[4] ?? '').split(',')) {
    const node = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(address.trim());
    const port = Number(node?.[2]);
    if (node === null || port < 1 || port > 65535) return undefined;
    nodes.push({ host: (node[1] ?? '').replace(/^\[|\]$/g, ''), port });
  }
  const decode = (value: string | undefined): string | undefined =>
    value === undefined || value === '' ? undefined : decodeURIComponent(value);
  try {
    return { nodes, username: decode(match[2]), password: decode(match[3]), tls: match[1] === 'rediss' };
  } catch {
    return undefined; // a malformed %-escape in the credentials
  }
}
