/**
 * The keys that belong to the server itself rather than to a feature: its `url` (svc-cm) and
 * `server.secretkey` (svc-secret). Every other key is parsed by the feature that owns it.
 */
import { keptOrAtStart, type SettingsInput, type SettingsSection } from './settings.js';
import type { ScopedSink } from './problems.js';

export const DEFAULT_URL = 'http://127.0.0.1:8080';

/**
 * Base URL without a trailing slash. `defaultUrl` is what a missing `url` means and what a bad
 * one falls back to at start: the server's own listen address when it knows it, so that the
 * advice in a problem names the port svc really listens on, not 8080.
 */
export function urlSection(defaultUrl: string = DEFAULT_URL): SettingsSection<string> {
  return {
    ownsCmKey: (key) => key === 'url',
    parse: (input, previous) => parseUrl(input.cm['url'], input.cmSink, previous, defaultUrl),
  };
}

export const serverSecretKeySection: SettingsSection<string | undefined> = {
  parse: (input, previous) => serverSecretKey(input, previous),
};

// A bad value keeps the one in force (DESIGN §2): falling back to the default instead would
// silently move callbacks to 127.0.0.1 on a typo.
function parseUrl(value: string | undefined, sink: ScopedSink, previous: string | undefined, defaultUrl: string): string {
  if (value === undefined || value === '') return defaultUrl;
  const problem = urlProblem(value);
  if (problem !== undefined) {
    sink.add(['url'], `${problem}; ${keptOrAtStart(`'${defaultUrl}'`)}`);
    return previous ?? defaultUrl;
  }
  return value.replace(/\/+$/, '');
}

/** svc's own address: callbacks are `<url>/api/...`, so a query, fragment or credentials would break them. */
function urlProblem(value: string): string | undefined {
  if (!URL.canParse(value) || !/^https?:$/.test(new URL(value).protocol)) return `'${value}' is not an http(s) URL${schemeHint(value)}`;
  const url = new URL(value);
  if (url.username !== '' || url.password !== '') return 'must not carry a user name or password';
  if (url.search !== '' || url.hash !== '' || value.includes('#') || value.includes('?')) return `'${value}' must not have a query or fragment`;
  return undefined;
}

/** `host:port` without a scheme reads as a URL of scheme `host:`; the likely meaning, when it is one. */
function schemeHint(value: string): string {
  if (value.includes('://')) return '';
  const guess = `http://${value}`;
  return URL.canParse(guess) && /^[\w.-]+:\d+(\/.*)?$/.test(value) ? ` (did you mean '${guess}'?)` : '';
}

/** A key removed by mistake keeps the one in force, so every session does not end on an edit. */
function serverSecretKey(input: SettingsInput, previous: string | undefined): string | undefined {
  const key = input.secret['server.secretkey'];
  if (key === undefined || key === '') {
    input.secretSink.add(['server.secretkey'], `is missing; ${keptOrAtStart('no key, so tokens cannot be issued or verified')}`);
    return previous;
  }
  return key;
}
