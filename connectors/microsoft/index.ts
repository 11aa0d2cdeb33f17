/**
 * The `microsoft` connector type: Microsoft Entra ID (issue 54). Parsing checks the config and
 * opens nothing; the connector warns once, at build, about settings that let more people in.
 */
import type { ConnectorDeps, ConnectorType } from '../connector.js';
import { isMultiTenant, parseMicrosoftConfig, type MicrosoftConfig } from './config.js';
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
  if (isMultiTenant(config.tenant)) {
    log.warn({ tenant: config.tenant }, `microsoft: tenant ${config.tenant}: users of any Entra tenant${config.tenant === 'common' ? ', and personal Microsoft accounts,' : ''} can log in; restrict them with groups (object ids) or a claim rule on tid`);
  }
  // Only a single tenant gets here with name (config.ts refuses it with common and organizations).
  // onlySecurityGroups does not make names safe: Entra lets every user create security groups
  // unless the tenant turns that off, and no display name is unique.
  if (config.groupNameFormat === 'name') {
    log.warn(`microsoft: groupNameFormat name: a group counts by its display name, which is not unique and which any user allowed to create groups in the tenant can give a new group (Entra lets every user create security groups${config.onlySecurityGroups ? '' : ' and Microsoft 365 groups'} unless the tenant turns that off); prefer id`);
  }
}
