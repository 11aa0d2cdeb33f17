/** `users.session.duration` of svc-cm: how long a login session lasts. */
import { keptOrAtStart, type SettingsSection } from '../config/settings.js';
import { parseDuration } from '../lib/duration.js';

export const DEFAULT_SESSION_DURATION_MS = 24 * 3_600_000;
const KEY = 'users.session.duration';

// A bad value keeps the one in force: falling back to the default would stretch sessions to 24h on a typo.
export const sessionDurationSection: SettingsSection<number> = {
  ownsCmKey: (key) => key === KEY,
  parse({ cm, cmSink }, previous) {
    const value = cm[KEY];
    if (value === undefined || value === '') return DEFAULT_SESSION_DURATION_MS;
    const ms = parseDuration(value);
    if (ms === undefined || ms <= 0) {
      cmSink.add([KEY], `'${value}' is not a duration (for example 24h, 90m); ${keptOrAtStart("'24h'")}`);
      return previous ?? DEFAULT_SESSION_DURATION_MS;
    }
    return ms;
  },
};
