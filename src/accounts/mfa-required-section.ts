/**
 * `users.mfa.required` of svc-cm: "true" makes every local login without a confirmed second
 * factor a session that may only enrol one (second-factor/confinement.ts). Default false. A
 * bad value keeps the one in force, and at start reads as "true": the safe side of a switch
 * that takes access away (a factorless account can still log in and enrol).
 */
import { keptOrAtStart, type SettingsSection } from '../config/settings.js';

export const MFA_REQUIRED_KEY = 'users.mfa.required';

export const mfaRequiredSection: SettingsSection<boolean> = {
  ownsCmKey: (key) => key === MFA_REQUIRED_KEY,
  parse({ cm, cmSink }, previous) {
    const value = cm[MFA_REQUIRED_KEY];
    if (value === undefined || value === '' || value === 'false') return false;
    if (value === 'true') return true;
    cmSink.add([MFA_REQUIRED_KEY], `must be "true" or "false", not '${value}'; ${keptOrAtStart('"true", the safe side')}`);
    return previous ?? true;
  },
};
