import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { ApiError } from '../../common/api-error.js';

/** Why a webhook URL is refused (`details.reason` of 422 WEBHOOK_URL_FORBIDDEN). */
export type ForbiddenReason = 'not_https' | 'loopback' | 'private_address' | 'link_local' | 'reserved' | 'unresolvable';

/** What the deployment allows (WEBHOOK_ALLOW_HTTP, WEBHOOK_ALLOW_PRIVATE). */
export interface UrlPolicy {
  readonly allowHttp: boolean;
  readonly allowPrivate: boolean;
}

const RANGES: readonly (readonly [ForbiddenReason, string, number, 'ipv4' | 'ipv6'])[] = [
  ['loopback', '127.0.0.0', 8, 'ipv4'],
  ['loopback', '::1', 128, 'ipv6'],
  ['private_address', '10.0.0.0', 8, 'ipv4'],
  ['private_address', '172.16.0.0', 12, 'ipv4'],
  ['private_address', '192.168.0.0', 16, 'ipv4'],
  ['private_address', '100.64.0.0', 10, 'ipv4'], // carrier-grade NAT
  ['private_address', 'fc00::', 7, 'ipv6'], // unique local
  ['link_local', '169.254.0.0', 16, 'ipv4'], // includes cloud metadata (169.254.169.254)
  ['link_local', 'fe80::', 10, 'ipv6'],
  ['reserved', '0.0.0.0', 8, 'ipv4'],
  ['reserved', '192.0.0.0', 24, 'ipv4'],
  ['reserved', '192.0.2.0', 24, 'ipv4'],
  ['reserved', '198.18.0.0', 15, 'ipv4'],
  ['reserved', '198.51.100.0', 24, 'ipv4'],
  ['reserved', '203.0.113.0', 24, 'ipv4'],
  ['reserved', '224.0.0.0', 4, 'ipv4'], // multicast
  ['reserved', '240.0.0.0', 4, 'ipv4'], // reserved and broadcast
  ['reserved', '::', 128, 'ipv6'],
  ['reserved', '64:ff9b::', 96, 'ipv6'], // NAT64 can reach any IPv4 address, private ones too
  ['reserved', '100::', 64, 'ipv6'],
  ['reserved', '2001:db8::', 32, 'ipv6'],
  ['reserved', '2001::', 23, 'ipv6'],
  ['reserved', '2002::', 16, 'ipv6'], // 6to4 embeds any IPv4 address
  ['reserved', 'ff00::', 8, 'ipv6'], // multicast
];

const BLOCKS = RANGES.map(([reason, network, prefix, family]) => {
  const list = new BlockList();
  list.addSubnet(network, prefix, family);
  return { reason, list, family };
});

/** Why an address may not receive webhooks, or undefined for a public one. */
export function forbiddenAddress(address: string): ForbiddenReason | undefined {
  const family = isIP(address);
  if (family === 0) return 'unresolvable';
  // An IPv4-mapped IPv6 address (::ffff:10.0.0.1, or ::ffff:a00:1 as URLs write it) is the IPv4 address it maps.
  const mapped = mappedIpv4(address);
  if (mapped !== undefined) return forbiddenAddress(mapped);
  const type = family === 4 ? 'ipv4' : 'ipv6';
  return BLOCKS.find((block) => block.family === type && block.list.check(address, type))?.reason;
}

function mappedIpv4(address: string): string | undefined {
  const dotted = /^(?:0{0,4}:){0,5}:?ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (dotted !== undefined) return dotted;
  const hex = /^(?:0{0,4}:){0,5}:?ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (hex?.[1] === undefined || hex[2] === undefined) return undefined;
  const high = parseInt(hex[1], 16);
  const low = parseInt(hex[2], 16);
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

/** The host of a URL as DNS and `isIP` see it (IPv6 literals lose their brackets). */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

function forbidden(reason: ForbiddenReason, host: string, address?: string): ApiError {
  const messages: Record<ForbiddenReason, string> = {
    not_https: 'Webhook URLs must use https (WEBHOOK_ALLOW_HTTP=true allows http for local use)',
    loopback: 'The webhook URL points at a loopback address',
    private_address: 'The webhook URL points at a private address',
    link_local: 'The webhook URL points at a link-local address',
    reserved: 'The webhook URL points at a reserved, non-public address',
    unresolvable: 'The webhook URL host does not resolve',
  };
  const suffix =
    reason === 'not_https' || reason === 'unresolvable' ? '' : ' (WEBHOOK_ALLOW_PRIVATE=true allows it for local use)';
  return new ApiError('WEBHOOK_URL_FORBIDDEN', messages[reason] + suffix, {
    reason,
    host,
    ...(address === undefined ? {} : { address }),
  });
}

/**
 * Every address the host resolves to must be public (one private answer is enough to refuse:
 * which one a connection would use is not ours to choose). Answers the addresses checked.
 */
export async function checkedAddresses(host: string, policy: UrlPolicy): Promise<readonly string[]> {
  if (isIP(host) !== 0) {
    const reason = policy.allowPrivate ? undefined : forbiddenAddress(host);
    if (reason !== undefined) throw forbidden(reason, host, host);
    return [host];
  }
  const answers = await lookup(host, { all: true, verbatim: true }).catch(() => []);
  if (answers.length === 0) throw forbidden('unresolvable', host);
  if (!policy.allowPrivate)
    for (const { address } of answers) {
      const reason = forbiddenAddress(address);
      if (reason !== undefined) throw forbidden(reason, host, address);
    }
  return answers.map((answer) => answer.address);
}

/**
 * A URL an endpoint may have (at creation, on change, and again before every delivery since DNS
 * can change): http(s) with a host and no credentials is a 400 otherwise; plain http or a
 * non-public address is 422 WEBHOOK_URL_FORBIDDEN unless the deployment allows it.
 */
export async function checkWebhookUrl(raw: string, policy: UrlPolicy): Promise<URL> {
  const url = parseWebhookUrl(raw);
  if (url.protocol === 'http:' && !policy.allowHttp) throw forbidden('not_https', hostOf(url));
  await checkedAddresses(hostOf(url), policy);
  return url;
}

/** The shape checks alone (400 naming `url`). */
export function parseWebhookUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw ApiError.field('url', 'url', 'url must be an absolute http or https URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw ApiError.field('url', 'url', 'url must be an absolute http or https URL');
  if (url.username !== '' || url.password !== '')
    throw ApiError.field('url', 'url', 'url must not carry credentials (put a token in the path or query instead)');
  if (url.hash !== '') throw ApiError.field('url', 'url', 'url must not have a fragment');
  return url;
}
