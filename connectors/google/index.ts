/**
 * The `google` connector type: Google accounts through Google's OpenID Connect, with the hosted
 * domain checked and Google Workspace groups read from the Admin SDK Directory API by a service
 * account (Dex's google connector; keys in ./config.ts). openid-client is loaded on the first
 * login (./lazy.ts).
 */
import type { ConnectorType } from '../connector.js';
import { parseGoogleConfig } from './config.js';
import { LazyGoogleConnector } from './lazy.js';

export const google = {
  type: 'google',
  parse(input) {
    const config = parseGoogleConfig(input);
    if (config === undefined) return undefined;
    return (deps) => new LazyGoogleConnector(config, deps);
  },
} satisfies ConnectorType;
