/** svc-rbac-cm: `policy.csv`, the `policy.<x>.csv` overlays, `policy.default` and `scopes`. */
import type { SettingsSection } from '../config/settings.js';
import type { LocalAccountNames } from '../principal.js';
import { warnAboutMeaning } from './meaning.js';
import { isOverlayKey, parsePolicy, type Policy } from './policy.js';

/** The local account names svc-cm declares (`accounts.<name>`), for the meaning checks. */
function accountNamesIn(cm: Readonly<Record<string, string>>): LocalAccountNames {
  return new Set(Object.keys(cm).flatMap((key) => (key.startsWith('accounts.') ? [key.slice('accounts.'.length).split('.')[0] ?? ''] : [])));
}

const RBAC_KEYS = ['policy.csv', 'policy.default', 'scopes'];

export const policySection: SettingsSection<Policy> = {
  parse({ rbac, cm, rbacSink }, previous) {
    const overlays: Record<string, string> = {};
    for (const [key, value] of Object.entries(rbac)) {
      if (isOverlayKey(key)) overlays[key] = value;
      else if (!RBAC_KEYS.includes(key)) rbacSink.add([key], 'unknown key');
    }
    const texts = [['policy.csv', rbac['policy.csv'] ?? ''] as const, ...Object.entries(overlays)];
    warnAboutMeaning(texts.map(([key, text]) => ({ text, sink: rbacSink.at(key) })), accountNamesIn(cm));
    return parsePolicy(
      {
        csv: rbac['policy.csv'] ?? '',
        overlays,
        ...(rbac['policy.default'] !== undefined ? { defaultRole: rbac['policy.default'] } : {}),
        ...(rbac['scopes'] !== undefined ? { scopes: rbac['scopes'] } : {}),
      },
      rbacSink,
      previous,
    );
  },
};
