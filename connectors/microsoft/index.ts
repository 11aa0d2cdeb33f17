/**
 * The `microsoft` connector type: Microsoft Entra ID (issue 54). Parsing checks the config and
 * opens nothing; the connector warns once, at build, about settings that let more people in.
 */
import type { ConnectorDeps, ConnectorType } from '../connector.js';
import { parseMicrosoftConfig, type MicrosoftConfig } from './config.js';
import { MicrosoftConnector } from './microsoft.js';

export const microsoft = {
  type: 'microsoft',
  parse(input) {
    const config = parseMicrosoftConfig(input);
    if (config === undefined) return undefined;
    return (deps) => {
      warnAtStart(config, deps);
      return new MicrosoftConnector(config, deps);
    };
  },
} satisfies ConnectorType;

function warnAtStart(config: MicrosoftConfig, { log }: ConnectorDeps): void {
  if (config.tenant === 'common' || config.tenant === 'organizations') {
    log.warn({ tenant: config.tenant }, `microsoft: tenant ${config.tenant}: users of any Entra tenant${config.tenant === 'common' ? ', and personal Microsoft accounts,' : ''} can log in; restrict them with groups or a claim rule on tid`);
  }
  if (config.groupNameFormat === 'name' && !config.onlySecurityGroups) {
    log.warn('microsoft: groupNameFormat name without onlySecurityGroups: group display names are not unique, and users may be able to create Microsoft 365 groups of any name');
  }
}
