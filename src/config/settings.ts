/**
 * svc-cm, svc-rbac-cm and svc-secret parsed once per change into one readonly Settings value.
 * Parsing never throws and never has side effects: every problem is collected with its key
 * path, bad entries are left out (keeping their last good version from `previous`), and the
 * good ones apply.
 */
import { isAccountKey, parseAccounts, type AccountSettings } from '../accounts/config.js';
import { readCatalog, type AppCatalog } from '../apps/catalog.js';
import { parseExtensionConfig, type ExtensionConfig } from '../extensions/config.js';
import { parseIdpConfig, type IdpConfig } from '../idp/config.js';
import { parseOidcConfig, type OidcConfig } from '../oidc/config.js';
import { isOverlayKey, parsePolicy, type Policy } from '../rbac/policy.js';
import { parseDuration } from './duration.js';
import { RBAC_CM, SETTINGS_CM, SETTINGS_SECRET, type StoreSnapshot } from './manifests.js';
import { ConfigProblems, ProblemSink, type ConfigProblem, type ScopedSink } from './problems.js';

export const DEFAULT_URL = 'http://127.0.0.1:8080';
export const DEFAULT_SESSION_DURATION_MS = 24 * 3_600_000;

export interface Settings {
  /** Base URL without a trailing slash. */
  readonly url: string;
  readonly serverSecretKey: string | undefined;
  readonly sessionDurationMs: number;
  readonly accounts: ReadonlyMap<string, AccountSettings>;
  readonly extensions: readonly ExtensionConfig[];
  readonly oidc: OidcConfig | undefined;
  readonly idp: IdpConfig | undefined;
  readonly oidcTlsInsecureSkipVerify: boolean;
  readonly policy: Policy;
  readonly catalog: AppCatalog;
}

export interface ParsedSettings {
  readonly settings: Settings;
  readonly problems: readonly ConfigProblem[];
}

const SIMPLE_CM_KEYS = new Set(['url', 'extension.config', 'idp.config', 'oidc.config', 'oidc.tls.insecure.skip.verify', 'users.session.duration']);

export function parseSettings(snapshot: StoreSnapshot, previous?: Settings): ParsedSettings {
  const sink = new ProblemSink();
  const cm = snapshot.configMaps.get(SETTINGS_CM)?.data ?? {};
  const rbac = snapshot.configMaps.get(RBAC_CM)?.data ?? {};
  const secret = snapshot.secrets.get(SETTINGS_SECRET)?.data ?? {};
  const cmSink = sink.scoped(SETTINGS_CM);

  for (const key of Object.keys(cm)) {
    if (!SIMPLE_CM_KEYS.has(key) && !isAccountKey(key)) cmSink.add([key], 'unknown key');
  }
  const settings: Settings = {
    url: parseUrl(cm['url'], cmSink, previous?.url),
    serverSecretKey: serverSecretKey(secret, sink.scoped(SETTINGS_SECRET), previous?.serverSecretKey),
    sessionDurationMs: parseSessionDuration(cm['users.session.duration'], cmSink, previous?.sessionDurationMs),
    accounts: parseAccounts({ cm, secret, cmSink, secretSink: sink.scoped(SETTINGS_SECRET), ...(previous ? { previous: previous.accounts } : {}) }),
    extensions: parseExtensionConfig(cm['extension.config'], snapshot.secrets, cmSink.at('extension.config'), previous?.extensions),
    oidc: parseOidcConfig(cm['oidc.config'], snapshot.secrets, cmSink.at('oidc.config'), previous?.oidc),
    idp: parseIdpConfig(cm['idp.config'], snapshot.secrets, cmSink.at('idp.config'), previous?.idp),
    oidcTlsInsecureSkipVerify: parseFlag(cm['oidc.tls.insecure.skip.verify'], cmSink, 'oidc.tls.insecure.skip.verify'),
    policy: parseRbac(rbac, sink.scoped(RBAC_CM), previous?.policy),
    catalog: readCatalog(snapshot, sink),
  };
  return { settings, problems: sink.problems };
}

/** For callers that want all-or-nothing: throws ConfigProblems listing every problem. */
export function parseSettingsStrict(snapshot: StoreSnapshot): Settings {
  const { settings, problems } = parseSettings(snapshot);
  if (problems.length > 0) throw new ConfigProblems(problems);
  return settings;
}

/** What a bad value is replaced by, as the end of its problem sentence. */
const KEPT = 'the previous value stays in force';

// A bad value keeps the one in force (DESIGN §2): falling back to the default instead would
// silently move callbacks to 127.0.0.1 or stretch sessions to 24h on a typo.
function parseUrl(value: string | undefined, sink: ScopedSink, previous: string | undefined): string {
  if (value === undefined || value === '') return DEFAULT_URL;
  const problem = urlProblem(value);
  if (problem !== undefined) {
    sink.add(['url'], `${problem}; ${previous === undefined ? `using ${DEFAULT_URL}` : KEPT}`);
    return previous ?? DEFAULT_URL;
  }
  return value.replace(/\/+$/, '');
}

/** svc's own address: callbacks are `<url>/api/...`, so a query, fragment or credentials would break them. */
function urlProblem(value: string): string | undefined {
  if (!URL.canParse(value) || !/^https?:$/.test(new URL(value).protocol)) return `'${value}' is not an http(s) URL`;
  const url = new URL(value);
  if (url.username !== '' || url.password !== '') return 'must not carry a user name or password';
  if (url.search !== '' || url.hash !== '' || value.includes('#') || value.includes('?')) return `'${value}' must not have a query or fragment`;
  return undefined;
}

function parseSessionDuration(value: string | undefined, sink: ScopedSink, previous: number | undefined): number {
  if (value === undefined || value === '') return DEFAULT_SESSION_DURATION_MS;
  const ms = parseDuration(value);
  if (ms === undefined || ms <= 0) {
    sink.add(['users.session.duration'], `'${value}' is not a duration (for example 24h, 90m); ${previous === undefined ? 'using 24h' : KEPT}`);
    return previous ?? DEFAULT_SESSION_DURATION_MS;
  }
  return ms;
}

function parseFlag(value: string | undefined, sink: ScopedSink, key: string): boolean {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  sink.add([key], `must be "true" or "false", not '${value}'`);
  return false;
}

/** A key removed by mistake keeps the one in force, so every session does not end on an edit. */
function serverSecretKey(secret: Readonly<Record<string, string>>, sink: ScopedSink, previous: string | undefined): string | undefined {
  const key = secret['server.secretkey'];
  if (key === undefined || key === '') {
    sink.add(['server.secretkey'], previous === undefined ? 'is missing: tokens cannot be issued or verified' : `is missing; ${KEPT}`);
    return previous;
  }
  return key;
}

function parseRbac(data: Readonly<Record<string, string>>, sink: ScopedSink, previous: Policy | undefined): Policy {
  const overlays: Record<string, string> = {};
  for (const [key, value] of Object.entries(data)) {
    if (isOverlayKey(key)) overlays[key] = value;
    else if (!['policy.csv', 'policy.default', 'scopes'].includes(key)) sink.add([key], 'unknown key');
  }
  return parsePolicy(
    {
      csv: data['policy.csv'] ?? '',
      overlays,
      ...(data['policy.default'] !== undefined ? { defaultRole: data['policy.default'] } : {}),
      ...(data['scopes'] !== undefined ? { scopes: data['scopes'] } : {}),
    },
    sink,
    previous,
  );
}
