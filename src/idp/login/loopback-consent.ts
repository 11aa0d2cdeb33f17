/**
 * Which authorizations ask the person before a code is issued. Any web page can start a code
 * flow, in a browser that has a session here, for a public client and a loopback redirect of its
 * choosing (RFC 8252 §8.6: a native client's loopback redirect takes any port); whatever
 * listens on that port would get the code, and a public client needs no secret to redeem it.
 * So every such authorization is asked, on a page naming the port: svc-cli's (its own page) and
 * a registered public application's (naming the application). A confidential client needs its
 * secret to redeem a code, and svc's web client redirects to svc itself: consent stays implied.
 *
 * The answer holds for that authorization only: the grant of an earlier consent is not reused
 * (provider.ts's `loadExistingGrant`), so each code flow asks again.
 */
import type Provider from 'oidc-provider';
import type { Interaction } from 'oidc-provider';

/** The hosts of a loopback redirect (RFC 8252 §7.3; `localhost` as oidc-provider allows it). */
const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** The port of an http loopback redirect URI, or undefined for any other value. */
export function loopbackPort(redirectUri: unknown): string | undefined {
  if (typeof redirectUri !== 'string') return undefined;
  const uri = URL.parse(redirectUri);
  if (uri === null || uri.protocol !== 'http:' || !LOOPBACK_HOSTS.has(uri.hostname)) return undefined;
  return uri.port || '80';
}

/** The loopback port to ask about, when `client` is public and the redirect is loopback. */
export function consentPortOf(client: { readonly clientAuthMethod?: string | undefined } | undefined, redirectUri: unknown): string | undefined {
  return client?.clientAuthMethod === 'none' ? loopbackPort(redirectUri) : undefined;
}

/** The port the login page must ask about for this interaction, or undefined (implied consent). */
export async function interactionConsentPort(provider: Provider, interaction: Interaction): Promise<string | undefined> {
  const clientId = interaction.params['client_id'];
  if (typeof clientId !== 'string') return undefined;
  return consentPortOf(await provider.Client.find(clientId), interaction.params['redirect_uri']);
}
