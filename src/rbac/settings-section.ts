/** svc-rbac-cm: `policy.csv`, the `policy.<x>.csv` overlays, `policy.default` and `scopes`. */
import type { SettingsSection } from '../config/settings.js';
import { isOverlayKey, parsePolicy, type Policy } from './policy.js';

const RBAC_KEYS = ['policy.csv', 'policy.default', 'scopes'];

export const policySection: SettingsSection<Policy> = {
  parse({ rbac, rbacSink }, previous) {
    const overlays: Record<string, string> = {};
    for (const [key, value] of Object.entries(rbac)) {
      if (isOverlayKey(key)) overlays[key] = value;
      else if (!RBAC_KEYS.includes(key)) rbacSink.add([key], 'unknown key');
    }
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
