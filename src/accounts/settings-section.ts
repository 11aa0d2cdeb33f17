/** The accounts' part of the settings: `admin.enabled`, `accounts.<name>[.enabled]` and their secrets. */
import type { SettingsSection } from '../config/settings.js';
import { isAccountKey, parseAccounts, type AccountSettings } from './config.js';

export const accountsSection: SettingsSection<ReadonlyMap<string, AccountSettings>> = {
  ownsCmKey: isAccountKey,
  parse: ({ cm, secret, cmSink, secretSink }, previous) => parseAccounts({ cm, secret, cmSink, secretSink, ...(previous ? { previous } : {}) }),
};
