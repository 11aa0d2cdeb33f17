/**
 * Token and record lifetimes of the bundled identity provider, in seconds: Dex's defaults
 * (dex `cmd/dex/serve.go`), since svc's users come from Argo CD-style setups that rely on them.
 */

/** Dex `expiry.idTokens` (24h); Dex's access tokens live as long. */
export const ID_TOKEN_TTL_S = 24 * 60 * 60;
export const ACCESS_TOKEN_TTL_S = ID_TOKEN_TTL_S;
/** Dex: 30 minutes, single use. */
export const AUTHORIZATION_CODE_TTL_S = 30 * 60;
/**
 * A login in progress, from the authorization request to the code: what a person needs to type
 * a password or pass an upstream's login (whose own round trip is 5 min), not Dex's 24 h
 * `expiry.authRequests`: anonymous requests make these records, so their lifetime bounds what
 * a flood can make the provider hold (with the bounds in provider.ts).
 */
export const INTERACTION_TTL_S = 10 * 60;
/** Dex `expiry.deviceRequests` (5m). */
export const DEVICE_CODE_TTL_S = 5 * 60;
/** Dex's browser session (absolute 24h). */
export const SESSION_TTL_S = 24 * 60 * 60;
/**
 * Dex has no absolute limit unless configured; state needs one, so Dex's sample
 * `absoluteLifetime: 3960h`. Rotated on every use, as Dex does by default.
 */
export const REFRESH_TOKEN_TTL_S = 3960 * 60 * 60;
/** A refresh needs its Grant: the Grant must live at least as long as the refresh token. */
export const GRANT_TTL_S = REFRESH_TOKEN_TTL_S;
/** A connector's browser round trip (state / RelayState): single use. */
export const CONNECTOR_TRANSACTION_TTL_S = 5 * 60;
