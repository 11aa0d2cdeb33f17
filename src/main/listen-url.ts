/**
 * The listen address against the external `url`: what a first start writes as `url`, and the
 * one disagreement between them that breaks SSO without saying so (a loopback `url` on another
 * port than the one svc listens on sends every browser's callback to the wrong place).
 */
import { DEFAULT_FIRST_URL } from '../config/bootstrap.js';

export interface ListenAddress {
  readonly host: string;
  /** 0 picks a free port (tests): not known before listening. */
  readonly port: number;
  readonly tls: boolean;
}

const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '']);
const LOOPBACK_NAMES = new Set(['localhost', '::1', '[::1]']);

/** `http(s)://host:port` for a listen address; the wildcard is reached on loopback. */
export function listenUrl(listen: ListenAddress): string {
  const host = WILDCARD_HOSTS.has(listen.host) ? '127.0.0.1' : listen.host;
  return `${listen.tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${listen.port}`;
}

/** The `url` a first start writes: the listen address, or the default when the port is not known yet. */
export function firstStartUrl(listen: ListenAddress): string {
  return listen.port === 0 ? DEFAULT_FIRST_URL : listenUrl(listen);
}

function isLoopback(host: string): boolean {
  return LOOPBACK_NAMES.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * Why `url` may not reach this listener, when it is on loopback but on another port (or scheme)
 * than the one bound; undefined when they agree or when `url` is another host (a proxy or DNS
 * name in front, which svc cannot check). A load balancer on loopback is possible too, so the
 * advice names the address users reach, not this listener's.
 */
export function urlListenMismatch(url: string, listen: ListenAddress): string | undefined {
  if (!URL.canParse(url)) return undefined;
  const parsed = new URL(url);
  if (!isLoopback(parsed.hostname)) return undefined;
  if (!isLoopback(listen.host) && !WILDCARD_HOSTS.has(listen.host)) return undefined;
  const scheme = listen.tls ? 'https:' : 'http:';
  const port = Number(parsed.port || (parsed.protocol === 'https:' ? 443 : 80));
  if (port === listen.port && parsed.protocol === scheme) return undefined;
  // Not "set url to this address": behind a proxy or load balancer each replica and worker
  // would advise its own, and following any of them would send browsers past the balancer.
  return `url ${url} is on loopback but this server listens on ${listenUrl(listen)}: unless a proxy or load balancer at ${url} forwards to svc, browsers sent to url after an SSO login will not reach it; set url in svc-cm to the address users reach svc at (the balancer's when there is one, ${listenUrl(listen)} only when users reach this server directly)`;
}
