import { Resolver } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { ApiError } from '../platform/http/api-error.js';

/** Why a webhook URL is refused (`details.reason` of 422 WEBHOOK_URL_FORBIDDEN). */
export type ForbiddenReason = 'not_https' | 'loopback' | 'private_address' | 'link_local' | 'reserved' | 'unresolvable';

export const MAX_URL_LENGTH = 2048;

/** What the deployment allows (WEBHOOK_ALLOW_HTTP, WEBHOOK_ALLOW_PRIVATE). */
export interface UrlPolicy {
  readonly allowHttp: boolean;
  readonly allowPrivate: boolean;
}

const IPV4_RANGES: readonly (readonly [ForbiddenReason, string, number])[] = [
  ['loopback', '127.0.0.0', 8],
  ['private_address', '10.0.0.0', 8],
  ['private_address', '172.16.0.0', 12],
  ['private_address', '192.168.0.0', 16],
  ['private_address', '100.64.0.0', 10], // carrier-grade NAT
  ['link_local', '169.254.0.0', 16], // includes cloud metadata (169.254.169.254)
  ['reserved', '0.0.0.0', 8],
  ['reserved', '192.0.0.0', 24],
  ['reserved', '192.0.2.0', 24],
  ['reserved', '198.18.0.0', 15],
  ['reserved', '198.51.100.0', 24],
  ['reserved', '203.0.113.0', 24],
  ['reserved', '224.0.0.0', 4], // multicast
  ['reserved', '240.0.0.0', 4], // reserved and broadcast
];

// IPv6 is allowed only in global unicast (2000::/3), less the ranges there that embed an IPv4
// address or are not routed (Teredo, benchmarking, ORCHID, documentation, 6to4): every other form
// (NAT64, IPv4-compatible, site-local, …) could reach a private IPv4 address through a translator.
const IPV6_GLOBAL = subnet('2000::', 3, 'ipv6');
const IPV6_NOT_PUBLIC = (
  [
    ['2001::', 23],
    ['2001:db8::', 32],
    ['2002::', 16],
    ['3fff::', 20],
  ] as const
).map(([network, prefix]) => subnet(network, prefix, 'ipv6'));
const IPV6_NAMED: readonly (readonly [ForbiddenReason, BlockList])[] = [
  ['loopback', subnet('::1', 128, 'ipv6')],
  ['private_address', subnet('fc00::', 7, 'ipv6')],
  ['link_local', subnet('fe80::', 10, 'ipv6')],
];
const IPV4_BLOCKS = IPV4_RANGES.map(([reason, network, prefix]) => ({ reason, list: subnet(network, prefix, 'ipv4') }));

function subnet(network: string, prefix: number, family: 'ipv4' | 'ipv6'): BlockList {
  const list = new BlockList();
  list.addSubnet(network, prefix, family);
  return list;
}

/** Why an address may not receive webhooks, or undefined for a public one. */
export function forbiddenAddress(address: string): ForbiddenReason | undefined {
  const family = isIP(address);
  if (family === 0) return 'unresolvable';
  if (family === 4) return IPV4_BLOCKS.find((block) => block.list.check(address, 'ipv4'))?.reason;
  // An IPv4-mapped IPv6 address (::ffff:10.0.0.1, or ::ffff:a00:1 as URLs write it) is the IPv4 address it maps.
  const mapped = mappedIpv4(address);
  if (mapped !== undefined) return forbiddenAddress(mapped);
  const named = IPV6_NAMED.find(([, list]) => list.check(address, 'ipv6'))?.[0];
  if (named !== undefined) return named;
  if (!IPV6_GLOBAL.check(address, 'ipv6') || IPV6_NOT_PUBLIC.some((list) => list.check(address, 'ipv6')))
    return 'reserved';
  return undefined;
}

function mappedIpv4(address: string): string | undefined {
  const dotted = /^(?:0{0,4}:){1,5}:?ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (dotted !== undefined) return dotted;
  const hex = /^(?:0{0,4}:){1,5}:?ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
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

/** How long one host resolution may take (it counts against a delivery's 10 s). */
export const RESOLVE_TIMEOUT_MS = 3000;

/**
 * The host's addresses, from DNS itself with a timeout (not `dns.lookup`, whose calls queue on
 * the few threads that also hash PINs). `localhost` names are loopback (RFC 6761), whatever a
 * resolver says.
 */
async function resolveHost(host: string): Promise<string[]> {
  const name = host.replace(/\.$/, '').toLowerCase();
  if (name === 'localhost' || name.endsWith('.localhost')) return ['127.0.0.1', '::1'];
  const resolver = new Resolver({ timeout: RESOLVE_TIMEOUT_MS, tries: 1 });
  const answers = await Promise.all([
    resolver.resolve4(name).catch(() => [] as string[]),
    resolver.resolve6(name).catch(() => [] as string[]),
  ]);
  return answers.flat();
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
  const addresses = await resolveHost(host);
  if (addresses.length === 0) throw forbidden('unresolvable', host);
  if (!policy.allowPrivate)
    for (const address of addresses) {
      const reason = forbiddenAddress(address);
      if (reason !== undefined) throw forbidden(reason, host, address);
    }
  return addresses;
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
    throw ApiError.field('url', 'url', 'url must not carry credentials (receivers verify the signature instead)');
  if (url.hash !== '') throw ApiError.field('url', 'url', 'url must not have a fragment');
  // What is stored is the normalised URL, which can be longer than what was sent (escapes).
  if (url.href.length > MAX_URL_LENGTH)
    throw ApiError.field('url', 'max_length', `url must be at most ${MAX_URL_LENGTH} characters once normalised`);
  return url;
}
