/** Applications and cluster secrets, read from the whole store (they are objects, not svc-cm keys). */
import type { SettingsSection } from '../config/settings.js';
import { readCatalog, type AppCatalog } from './catalog.js';

export const catalogSection: SettingsSection<AppCatalog> = {
  parse: ({ snapshot, sink }) => readCatalog(snapshot, sink),
};
