/**
 * The settings of this build: every feature's section, in the order their problems are
 * reported. The Settings type follows from the list, so a feature added here is a field there.
 */
import { accountsSection } from '../accounts/settings-section.js';
import { catalogSection } from '../apps/settings-section.js';
import { serverSecretKeySection, urlSection } from '../config/server-settings.js';
import { createSettingsParser, strictly, type SettingsOf } from '../config/settings.js';
import { extensionsSection } from '../extensions/settings-section.js';
import { idpSection } from '../idp/settings-section.js';
import { keyRotationSection } from '../idp/key-rotation-section.js';
import { oidcSection, oidcTlsInsecureSection } from '../oidc/settings-section.js';
import { policySection } from '../rbac/settings-section.js';
import { sessionDurationSection } from '../session/settings-section.js';
import { workloadSection } from '../workload/settings-section.js';

const SECTIONS = {
  url: urlSection,
  serverSecretKey: serverSecretKeySection,
  sessionDurationMs: sessionDurationSection,
  accounts: accountsSection,
  extensions: extensionsSection,
  oidc: oidcSection,
  idp: idpSection,
  idpKeyRotationMs: keyRotationSection,
  oidcTlsInsecureSkipVerify: oidcTlsInsecureSection,
  policy: policySection,
  catalog: catalogSection,
  workloads: workloadSection,
};

export type Settings = SettingsOf<typeof SECTIONS>;

export const parseSettings = createSettingsParser(SECTIONS);

export const parseSettingsStrict = strictly(parseSettings);
