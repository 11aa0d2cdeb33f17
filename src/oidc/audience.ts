/**
 * The audience rule of SPEC.md (behaviour from 2.6.0 on): a token passes when any of its
 * audiences is one of the allowed ones; a token without `aud` passes only when
 * skipAudienceCheckWhenTokenHasNoAudience is true.
 */
export type AudienceResult = { readonly ok: true } | { readonly ok: false; readonly reason: string };

export interface AudienceRule {
  readonly audiences: readonly string[];
  readonly skipAudienceCheckWhenTokenHasNoAudience: boolean;
}

export function checkAudience(aud: unknown, rule: AudienceRule): AudienceResult {
  const tokenAudiences = aud === undefined ? [] : Array.isArray(aud) ? aud.filter((a): a is string => typeof a === 'string') : typeof aud === 'string' ? [aud] : [];
  if (tokenAudiences.length === 0) {
    return rule.skipAudienceCheckWhenTokenHasNoAudience ? { ok: true } : { ok: false, reason: 'token has no audience' };
  }
  if (tokenAudiences.some((a) => rule.audiences.includes(a))) return { ok: true };
  return { ok: false, reason: 'token audience is not allowed' };
}
