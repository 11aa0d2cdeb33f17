/** `workload.config` of svc-cm: the workload token issuers svc trusts (config.ts). */
import type { SettingsSection } from '../config/settings.js';
import { parseWorkloadConfig, type WorkloadIssuer } from './config.js';

export const WORKLOAD_CONFIG_KEY = 'workload.config';

export const workloadSection: SettingsSection<readonly WorkloadIssuer[]> = {
  ownsCmKey: (key) => key === WORKLOAD_CONFIG_KEY,
  parse: ({ cm, secrets, cmSink }, previous) => parseWorkloadConfig(cm[WORKLOAD_CONFIG_KEY], secrets, cmSink.at(WORKLOAD_CONFIG_KEY), previous),
};
