/** `idp.config` of svc-cm: the bundled identity provider's connectors. */
import type { SettingsSection } from '../config/settings.js';
import { parseIdpConfig, type IdpConfig } from './connectors/config.js';

export const idpSection: SettingsSection<IdpConfig | undefined> = {
  ownsCmKey: (key) => key === 'idp.config',
  parse: ({ cm, secrets, cmSink }, previous) => parseIdpConfig(cm['idp.config'], secrets, cmSink.at('idp.config'), previous),
};
