/**
 * fetch over a connection pool of its own with one TLS policy: the system roots plus extra CA
 * certificates (added, not replacing them, as Dex does), or no verification at all when an
 * operator switched it off. Used for every upstream svc talks HTTP to: an external OIDC provider
 * and the bundled provider's connectors (GitHub, GitLab, upstream OIDC).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { rootCertificates } from 'node:tls';
import { Agent, fetch as undiciFetch } from 'undici';
import { innermostCause } from './error-cause.js';

export interface TlsPolicy {
  /** PEM certificates trusted besides the system roots. */
  readonly rootCAs?: readonly string[];
  /** Verification off: only for an operator's explicit switch, warned about by the caller. */
  readonly insecureSkipVerify?: boolean;
  /** Time to establish a connection (TCP and TLS); default 10 s. */
  readonly connectTimeoutMs?: number;
  /** Time to wait for the response headers and between body chunks; default 30 s. */
  readonly responseTimeoutMs?: number;
}

export interface TlsFetch {
  readonly fetch: typeof globalThis.fetch;
  close(): Promise<void>;
}

export function createTlsFetch(policy: TlsPolicy = {}): TlsFetch {
  const extra = policy.rootCAs ?? [];
  const responseTimeout = policy.responseTimeoutMs ?? 30_000;
  const agent = new Agent({
    connect: policy.insecureSkipVerify === true
      ? { rejectUnauthorized: false, timeout: policy.connectTimeoutMs ?? 10_000 }
      : { ...(extra.length > 0 ? { ca: [...rootCertificates, ...extra] } : {}), timeout: policy.connectTimeoutMs ?? 10_000 },
    headersTimeout: responseTimeout,
    bodyTimeout: responseTimeout,
  });
  const fetchImpl = ((input: Parameters<typeof globalThis.fetch>[0], init?: RequestInit) =>
    undiciFetch(input as string, { ...(init as object), dispatcher: agent })) as unknown as typeof globalThis.fetch;
  return {
    fetch: fetchImpl,
    // Requests under way get a moment to finish; then the pool is destroyed. undici's close()
    // waits for them, and for a connection to an upstream that accepts TCP but never answers
    // until its connect timeout (10 s), even after its request was aborted: that held a config
    // reload or a shutdown for as long. Such a connection still ends at its timeout.
    async close() {
      // An unref'd timer: a pool that closes at once leaves nothing to wait for.
      const graceOver = sleep(CLOSE_GRACE_MS, 'cut' as const, { ref: false });
      if ((await Promise.race([agent.close().then(() => 'closed' as const), graceOver])) === 'cut') await agent.destroy();
    },
  };
}

/** How long close() lets requests under way finish before it ends them. */
export const CLOSE_GRACE_MS = 1_000;

/** The innermost cause's code and message: a certificate error names itself (UNABLE_TO_VERIFY_LEAF_SIGNATURE). */
export function describeFailure(err: unknown): string {
  const cause = innermostCause(err);
  if (!(cause instanceof Error)) return String(cause);
  const code = (cause as { code?: unknown }).code;
  return `${isCertificateError(err) ? 'certificate verification failed: ' : ''}${typeof code === 'string' ? `${code}: ` : ''}${cause.message}`;
}

/** Whether a fetch failed on the server's certificate (unknown CA, wrong name, expired). */
export function isCertificateError(err: unknown): boolean {
  let cause: unknown = err;
  for (let i = 0; i < 6 && cause instanceof Error; i++) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === 'string' && /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ALTNAME/.test(code)) return true;
    cause = cause.cause;
  }
  return false;
}
