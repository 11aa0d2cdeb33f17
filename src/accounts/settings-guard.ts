/**
 * The check every account write (api-tokens.ts, password-change.ts) makes inside the store's
 * read-modify-write: would the settings take the account as it stands after this patch? The
 * settings parser refuses a whole account for one bad value (a token record it cannot read, an
 * unreadable passwordMtime, a typo in svc-cm) and keeps its last good version, so a write on
 * top of such a value would be reported as done and change nothing: a deleted token would keep
 * working, an old password would keep logging in. Such a write is refused (503, as the
 * operator must act) and nothing is written.
 */
import { SETTINGS_CM } from '../config/manifests.js';
import { formatProblem, type ConfigProblem } from '../config/problems.js';
import { patchedValues, type ConfigStore, type SecretPatch } from '../config/store.js';
import { Unavailable } from '../errors.js';
import { accountProblems } from './config.js';

/** The Unavailable error for an account whose stored settings do not parse. */
export function unreadableAccount(name: string, problems: readonly ConfigProblem[]): Unavailable {
  return new Unavailable(
    `account '${name}' cannot be changed: ${problems.map(formatProblem).join('; ')}. ` +
      'Until an operator fixes that, svc keeps the last good version of the account and ignores changes to it, so nothing was written',
  );
}

/**
 * Returns `patch` if the account parses once it is applied to `secret` (svc-secret as stored
 * now) with svc-cm as the store holds it; throws unreadableAccount otherwise.
 */
export function patchThatTakesEffect(store: Pick<ConfigStore, 'current'>, name: string, secret: Readonly<Record<string, string>>, patch: SecretPatch): SecretPatch {
  const after = patchedValues(secret, patch);
  const cm = store.current().configMaps.get(SETTINGS_CM)?.data ?? {};
  const problems = accountProblems(name, cm, after);
  if (problems.length > 0) throw unreadableAccount(name, problems);
  return patch;
}
