/** `oidc.config` and `oidc.tls.insecure.skip.verify` of svc-cm. */
import { parseFlag, type SettingsSection } from '../config/settings.js';
import { parseOidcConfig, type OidcConfig } from './config.js';

export const OIDC_TLS_INSECURE_KEY = 'oidc.tls.insecure.skip.verify';

export const oidcSection: SettingsSection<OidcConfig | undefined> = {
  ownsCmKey: (key) => key === 'oidc.config',
  parse: ({ cm, secrets, cmSink }, previous) => parseOidcConfig(cm['oidc.config'], secrets, cmSink.at('oidc.config'), previous, cm['url']),
};

/** Applies to the external provider and to the bundled provider's upstream connectors alike. */
export const oidcTlsInsecureSection: SettingsSection<boolean> = {
  ownsCmKey: (key) => key === OIDC_TLS_INSECURE_KEY,
  parse: ({ cm, cmSink }) => parseFlag(cm[OIDC_TLS_INSECURE_KEY], cmSink, OIDC_TLS_INSECURE_KEY),
};
