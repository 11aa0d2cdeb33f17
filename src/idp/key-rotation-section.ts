/**
 * `idp.keyRotation` of svc-cm: how often the bundled identity provider's signing key is
 * replaced by itself (docs/idp.md, "Automatic rotation"). `0` leaves it to
 * `svc-server idp rotate-keys`.
 */
import { keptOrAtStart, type SettingsSection } from '../config/settings.js';
import { formatDuration, parseDuration } from '../lib/duration.js';
import { ID_TOKEN_TTL_S } from './lifetimes.js';
import { PUBLISH_BEFORE_SIGNING_S } from './keys.js';

export const KEY_ROTATION_KEY = 'idp.keyRotation';
/** A week: a key signs for 7 days, then stays published one more day (the ID token lifetime). */
export const DEFAULT_KEY_ROTATION_MS = 168 * 3_600_000;
/**
 * The shortest period. A retired key stays published a day (ID_TOKEN_TTL_S plus a grace), so
 * the JWKS holds about a day's worth of periods plus one: an hour keeps it to some 25 keys.
 * It must also exceed the time a new key waits before it signs, or keys would be replaced
 * before they ever sign.
 */
export const MIN_KEY_ROTATION_MS = Math.max(3_600_000, 2 * PUBLISH_BEFORE_SIGNING_S * 1000);

const DEFAULT_TEXT = `'${formatDuration(DEFAULT_KEY_ROTATION_MS)}'`;

// A bad value keeps the period in force: falling back to the default, or to never, on a typo
// would change how long a stolen key signs without anyone asking for it.
export const keyRotationSection: SettingsSection<number> = {
  ownsCmKey: (key) => key === KEY_ROTATION_KEY,
  parse({ cm, cmSink }, previous) {
    const value = cm[KEY_ROTATION_KEY];
    if (value === undefined || value === '') return DEFAULT_KEY_ROTATION_MS;
    if (value.trim() === '0') return 0;
    const ms = parseDuration(value);
    if (ms === undefined) {
      cmSink.add([KEY_ROTATION_KEY], `'${value}' is not a duration (for example 168h, 24h; 0 for manual rotation only); ${keptOrAtStart(DEFAULT_TEXT)}`);
      return previous ?? DEFAULT_KEY_ROTATION_MS;
    }
    if (ms < MIN_KEY_ROTATION_MS) {
      cmSink.add([KEY_ROTATION_KEY], `'${value}' is shorter than ${formatDuration(MIN_KEY_ROTATION_MS)}: a retired key stays published until its ID tokens expire (${formatDuration(ID_TOKEN_TTL_S * 1000)}), so shorter periods pile up keys; use 0 for manual rotation only; ${keptOrAtStart(DEFAULT_TEXT)}`);
      return previous ?? DEFAULT_KEY_ROTATION_MS;
    }
    return ms;
  },
};
