/** Who is calling, once a token has been verified. Knows nothing of HTTP. */
export interface Principal {
  /** Local account name, the SSO `sub`, or `workload:<issuer entry>:<subject>` (built by svc, src/workload/). */
  readonly username: string;
  readonly groups: readonly string[];
  /** `svc` for local tokens, the provider's issuer for SSO tokens, the workload issuer's URL for workload tokens. */
  readonly issuer: string;
  readonly kind: 'session' | 'apiKey' | 'sso' | 'workload';
  readonly tokenId: string;
  /** Seconds since the epoch; undefined for API tokens without expiry. */
  readonly expiresAt: number | undefined;
}

/** The RBAC subjects of a principal: the user, then each of its groups. */
export function subjectsOf(principal: Principal): readonly string[] {
  return [principal.username, ...principal.groups];
}
