/**
 * TLS towards https backends: verified against the system roots plus the service's optional CA
 * (`caData`), a client certificate for mutual TLS (`certData`/`keyData`), and `serverName` for
 * SNI and the certificate check when it differs from the URL's host. Never an insecure switch.
 * The options suit both undici's `connect` and node:https.
 */
import { rootCertificates, type ConnectionOptions } from 'node:tls';
import type { BackendService } from './config.js';

export type BackendTlsOptions = Pick<ConnectionOptions, 'ca' | 'cert' | 'key' | 'servername' | 'rejectUnauthorized'>;

/** undefined for an http backend. Node replaces the default roots when `ca` is set, so they are added back. */
export function tlsOptionsFor(service: BackendService): BackendTlsOptions | undefined {
  if (!service.url.startsWith('https:')) return undefined;
  const tls = service.tls;
  return {
    rejectUnauthorized: true,
    ...(tls?.caData !== undefined ? { ca: [...rootCertificates, tls.caData] } : {}),
    ...(tls?.certData !== undefined ? { cert: tls.certData } : {}),
    ...(tls?.keyData !== undefined ? { key: tls.keyData } : {}),
    ...(tls?.serverName !== undefined ? { servername: tls.serverName } : {}),
  };
}

/** Error codes that mean the TLS handshake or certificate check failed. */
const TLS_CODES = /^(ERR_TLS_|ERR_SSL_|UNABLE_TO_|CERT_|DEPTH_ZERO_SELF_SIGNED_CERT$|SELF_SIGNED_CERT_IN_CHAIN$|HOSTNAME_MISMATCH$|ERR_OSSL_)/;

export function isTlsError(code: string | undefined): boolean {
  return code !== undefined && TLS_CODES.test(code);
}
