/**
 * What an "unknown key" says: a key an Argo CD operator would write gets the svc form beside
 * it, and a key a letter or two away from a known one gets "did you mean". Hints only: the key
 * is still reported and still not used.
 */

import { CLAIM_RULE_KEYS } from '../claims/keys.js';

type Path = readonly (string | number)[];

/** The svc-cm keys whose names are fixed (accounts.<name>… follow a pattern, see accounts/config.ts). */
export const KNOWN_CM_KEYS = [
  'url', 'users.session.duration', 'admin.enabled', 'extension.config', 'oidc.config', 'idp.config',
  'oidc.tls.insecure.skip.verify', 'workload.config', 'idp.keyRotation', 'users.ssoTokens.maxLifetime', 'users.sso.groupsRecheck', 'users.mfa.required',
] as const;

/** Argo CD's svc-cm keys with the svc key that does their job. */
const ARGO_CM_KEYS: Readonly<Record<string, string>> = {
  'dex.config': "Argo CD's dex.config is idp.config here (the bundled identity provider; docs/idp.md)",
  'server.rbac.log.enforce.enable': 'svc logs refusals at debug; there is no switch',
  'timeout.reconciliation': 'svc has no reconciliation',
};

/** The message for an unknown svc-cm key. */
export function unknownCmKeyMessage(key: string): string {
  const argo = ARGO_CM_KEYS[key];
  if (argo !== undefined) return `unknown key: ${argo}`;
  const near = closest(key, KNOWN_CM_KEYS);
  return near === undefined ? 'unknown key' : `unknown key; did you mean '${near}'?`;
}

/**
 * The message for an unknown key inside a YAML value; `path` is where it stands (data key
 * first), `known` the keys allowed there when the schema tells.
 */
export function unknownKeyMessage(path: Path, key: string, known: readonly string[] = []): string {
  const where = path.filter((p): p is string => typeof p === 'string');
  if (key === 'cluster' && where.includes('services')) {
    return "unknown key: Argo CD's cluster: {name: …} is clusterName: … here (the name of the cluster Secret)";
  }
  const near = closest(key, isConnectorConfig(path) ? [...known, ...CLAIM_RULE_KEYS] : known);
  return near === undefined ? 'unknown key' : `unknown key; did you mean '${near}'?`;
}

/**
 * `idp.config: connectors[i].config` itself: every type's schema lists only its own keys, and the
 * claim rules every type takes (src/claims/) are checked apart, so they are added here.
 */
function isConnectorConfig(path: Path): boolean {
  return path.length === 4 && path[0] === 'idp.config' && path[1] === 'connectors' && typeof path[2] === 'number' && path[3] === 'config';
}

/** The known name within two edits of `key` (or equal but for case), when there is exactly one best. */
export function closest(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  // Two edits on a short key reach unrelated keys (port, host): one then.
  let bestDistance = key.length < 6 ? 2 : 3;
  for (const candidate of known) {
    const d = candidate.toLowerCase() === key.toLowerCase() ? 0 : distance(key, candidate);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

/** Levenshtein distance, bounded by the short strings config keys are. */
function distance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 2) return 3;
  let row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) next[j] = Math.min((row[j] ?? 0) + 1, (next[j - 1] ?? 0) + 1, (row[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length] ?? 0;
}
