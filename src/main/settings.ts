/**
 * The settings of this build: every feature's section, in the order their problems are
 * reported. The Settings type follows from the list, so a feature added here is a field there.
 */
import { accountsSection } from '../accounts/settings-section.js';
import { mfaRequiredSection } from '../accounts/mfa-required-section.js';
import { catalogSection } from '../apps/settings-section.js';
import { DEFAULT_URL, serverSecretKeySection, urlSection } from '../config/server-settings.js';
import { createSettingsParser, strictly, type SettingsOf, type SettingsParser } from '../config/settings.js';
import { extensionsSection } from '../extensions/settings-section.js';
import { idpSection } from '../idp/settings-section.js';
import { keyRotationSection } from '../idp/key-rotation-section.js';
import { oidcSection, oidcTlsInsecureSection } from '../oidc/settings-section.js';
import { policySection } from '../rbac/settings-section.js';
import { sessionDurationSection } from '../session/settings-section.js';
import { ssoTokenRecordsSection } from '../ssotokens/records.js';
import { ssoTokenLimitsSection } from '../ssotokens/settings-section.js';
import { workloadSection } from '../workload/settings-section.js';

/** `defaultUrl`: what a missing or (at start) bad `url` means; the server passes its listen address. */
function sections(defaultUrl: string) {
  return {
    url: urlSection(defaultUrl),
    serverSecretKey: serverSecretKeySection,
    sessionDurationMs: sessionDurationSection,
    accounts: accountsSection,
    mfaRequired: mfaRequiredSection,
    extensions: extensionsSection,
    oidc: oidcSection,
    idp: idpSection,
    idpKeyRotationMs: keyRotationSection,
    oidcTlsInsecureSkipVerify: oidcTlsInsecureSection,
    policy: policySection,
    catalog: catalogSection,
    workloads: workloadSection,
    ssoTokenLimits: ssoTokenLimitsSection,
    ssoTokens: ssoTokenRecordsSection,
  };
}

export type Settings = SettingsOf<ReturnType<typeof sections>>;

/** The parser of a server listening at `defaultUrl`. */
export function settingsParserFor(defaultUrl: string): SettingsParser<Settings> {
  return createSettingsParser(sections(defaultUrl));
}

/** The parser of readers that listen nowhere (`validate`): a missing url means the default one. */
export const parseSettings = settingsParserFor(DEFAULT_URL);

export const parseSettingsStrict = strictly(parseSettings);
