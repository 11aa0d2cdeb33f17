/**
 * The application a login is for, as the login pages name it: the client's `name` and logo
 * (idp.config staticClients). svc's own clients have no name and get no banner.
 */
import type Provider from 'oidc-provider';
import type { Interaction } from 'oidc-provider';
import type { Application } from './pages.js';

export async function applicationOf(provider: Provider, interaction: Interaction): Promise<Application | undefined> {
  const clientId = interaction.params['client_id'];
  if (typeof clientId !== 'string') return undefined;
  const client = await provider.Client.find(clientId);
  if (client?.clientName === undefined) return undefined;
  const logoUrl = typeof client.logoUri === 'string' ? client.logoUri : undefined;
  return { name: client.clientName, ...(logoUrl !== undefined ? { logoUrl } : {}) };
}

/** The origin the page's CSP must allow for the logo, if any. */
export function logoOrigin(application: Application | undefined): string | undefined {
  return application?.logoUrl === undefined ? undefined : URL.parse(application.logoUrl)?.origin;
}
