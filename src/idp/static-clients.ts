/**
 * Serves `staticClients` of idp.config to oidc-provider without a restart. oidc-provider keeps
 * the clients of its `clients` option (svc's own two) for its lifetime and asks its adapter's
 * `Client` model for any other id on every request that names one; the answer is turned into a
 * client object cached by a hash of its metadata (an LRU of 100). So the `Client` model here
 * answers from the live settings: each replica reads its own copy of the store, a new or changed
 * client is in force on the next request, and a removed one is unknown (`invalid_client`).
 * Nothing about clients is written to the state backend.
 */
import type { AdapterConstructor, AdapterPayload, ClientMetadata } from 'oidc-provider';
import { DEVICE_CODE_GRANT } from './clients.js';
import { isNativeClient, type StaticClient } from './static-clients-config.js';

export type StaticClientSource = () => readonly StaticClient[];

/**
 * What a registration allows, as oidc-provider metadata: the code flow to its own redirect URIs,
 * refresh (given only when `offline_access` is asked, provider.ts), the device flow only for a
 * public client, and sign-out redirects to its own `postLogoutRedirectURIs` only.
 */
export function clientMetadataOf(client: StaticClient): ClientMetadata {
  const grants = ['authorization_code', 'refresh_token'];
  return {
    client_id: client.id,
    client_name: client.name,
    application_type: isNativeClient(client) ? 'native' : 'web',
    redirect_uris: [...client.redirectURIs],
    post_logout_redirect_uris: [...client.postLogoutRedirectURIs],
    response_types: ['code'],
    ...(client.public
      ? { grant_types: [...grants, DEVICE_CODE_GRANT], token_endpoint_auth_method: 'none' }
      // Registered as Basic (what OAuth 2.0 libraries try first); oidc-provider accepts the same secret in the form (client_secret_post) too.
      : { grant_types: grants, token_endpoint_auth_method: 'client_secret_basic', client_secret: client.secret }),
    ...(client.logoURL !== undefined ? { logo_uri: client.logoURL } : {}),
    // With the session required, the provider puts `sid` in this client's ID tokens and logout tokens.
    ...(client.backchannelLogoutUri !== undefined ? { backchannel_logout_uri: client.backchannelLogoutUri, backchannel_logout_session_required: true } : {}),
  };
}

/** `Base` (the state adapter) with its `Client` model answered by `clients`. */
export function withStaticClients(Base: AdapterConstructor, clients: StaticClientSource): AdapterConstructor {
  return class StaticClientsAdapter extends Base {
    readonly #clients: boolean;

    constructor(name: string) {
      super(name);
      this.#clients = name === 'Client';
    }

    override async find(id: string): Promise<AdapterPayload | undefined> {
      if (!this.#clients) return (await super.find(id)) ?? undefined;
      const client = clients().find((c) => c.id === id);
      return client === undefined ? undefined : (clientMetadataOf(client) as AdapterPayload);
    }

    override async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
      // Registration is off; clients come from idp.config only.
      if (this.#clients) throw new TypeError('identity provider clients are configured in idp.config, never stored');
      return super.upsert(id, payload, expiresIn);
    }
  };
}
