/** `extension.config` of svc-cm. */
import type { SettingsSection } from '../config/settings.js';
import { parseExtensionConfig, type ExtensionConfig } from './config.js';

export const extensionsSection: SettingsSection<readonly ExtensionConfig[]> = {
  ownsCmKey: (key) => key === 'extension.config',
  parse: ({ cm, secrets, cmSink }, previous) => parseExtensionConfig(cm['extension.config'], secrets, cmSink.at('extension.config'), previous),
};
