/**
 * The login without a browser on this machine: the device authorization grant (RFC 8628).
 * openid-client polls at the provider's interval and backs off on slow_down; what ends the
 * wait (expired_token, access_denied) becomes one line saying what happened.
 */
import * as oidc from 'openid-client';
import { CliError } from '../errors.js';
import { providerReason, type SsoProvider } from './discovery.js';

const DEVICE_ERRORS: Readonly<Record<string, string>> = {
  expired_token: "the device code expired before it was approved; run 'svc login' again",
  access_denied: 'the login was denied in the browser',
};

export async function deviceFlowLogin(config: oidc.Configuration, provider: SsoProvider, say: (line: string) => void): Promise<oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers> {
  if (config.serverMetadata().device_authorization_endpoint === undefined) {
    throw new CliError(`the identity provider at ${provider.issuer} offers no device login; run 'svc login --sso' without --no-browser`);
  }
  let device: oidc.DeviceAuthorizationResponse;
  try {
    device = await oidc.initiateDeviceAuthorization(config, { scope: provider.scope });
  } catch (err: unknown) {
    throw new CliError(`the identity provider refused the device login: ${providerReason(err)}`, { cause: err });
  }
  say(`To log in, visit ${device.verification_uri} and enter the code ${device.user_code}`);
  if (device.verification_uri_complete !== undefined) say(`(or visit ${device.verification_uri_complete})`);
  try {
    return await oidc.pollDeviceAuthorizationGrant(config, device);
  } catch (err: unknown) {
    // The wait ends by itself after expires_in: openid-client aborts with a TimeoutError then.
    const code = err instanceof oidc.ResponseBodyError ? err.error : timedOut(err) ? 'expired_token' : undefined;
    const known = code !== undefined ? DEVICE_ERRORS[code] : undefined;
    throw new CliError(known ?? `device login failed: ${providerReason(err)}`, { cause: err });
  }
}

function timedOut(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (e.name === 'TimeoutError') return true;
  }
  return false;
}
