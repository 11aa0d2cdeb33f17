/**
 * oidc-provider writes its runtime notices and warnings ("oidc-provider WARNING: …", from its
 * lib/helpers/attention.js: an unsupported runtime, a default it wants changed) with
 * console.warn and console.info, a bare line on stderr or stdout beside svc's JSON log. While a
 * server runs the bundled provider, those lines go into its log instead, at warn and info, with
 * `source: oidc-provider`; every other console line passes through untouched.
 *
 * The console is the process's own, so this cannot be a dependency passed down: the server
 * installs the routing before it imports the provider and removes it when it closes. With two
 * servers in one process (tests), the one installed last gets the lines; a routing removed out
 * of order stops routing and passes lines on.
 */
import type { Logger } from 'pino';

type ConsoleLike = Pick<Console, 'warn' | 'info'>;

// The provider colours its lines on a TTY (ESC [ … m).
// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-9;]*m/g;
const PROVIDER_LINE = /^oidc-provider (WARNING|NOTICE): ([\s\S]*)$/;

export function routeProviderConsole(log: Pick<Logger, 'warn' | 'info'>, target: ConsoleLike = console): () => void {
  const original = { warn: target.warn, info: target.info };
  let active = true;
  const wrap = (passOn: (...args: unknown[]) => void) => function providerAware(...args: unknown[]): void {
    const match = active && typeof args[0] === 'string' ? PROVIDER_LINE.exec(args[0].replace(ANSI, '')) : null;
    if (match === null) {
      passOn.apply(target, args);
      return;
    }
    const text = (match[2] ?? '').trim();
    if (match[1] === 'WARNING') log.warn({ source: 'oidc-provider' }, `identity provider (oidc-provider): ${text}`);
    else log.info({ source: 'oidc-provider' }, `identity provider (oidc-provider): ${text}`);
  };
  const routed = { warn: wrap(original.warn), info: wrap(original.info) };
  target.warn = routed.warn;
  target.info = routed.info;
  return () => {
    active = false;
    if (target.warn === routed.warn) target.warn = original.warn;
    if (target.info === routed.info) target.info = original.info;
  };
}
