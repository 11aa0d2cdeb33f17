/**
 * Where an account's second factor and its session cut-off live in svc-secret. Every
 * second-factor key sits under `mfa.<name>.` (an owned prefix, config/own-secrets.ts, so no `$`
 * reference can read it), so resetting an account's factors is "delete every `mfa.<name>.` key".
 * `sessionsNotBefore` (config.ts) sits beside `passwordMtime` instead: it is an account rule,
 * not a factor, and outlives a reset.
 */
export interface SecondFactorKeys {
  /** The sealed TOTP secret. */
  readonly totp: string;
  /** JSON list of the unused recovery codes' HMACs. */
  readonly recoveryCodes: string;
  /** JSON list of passkeys (PasskeyRecord). */
  readonly passkeys: string;
}

export function secondFactorPrefix(name: string): string {
  return `mfa.${name}.`;
}

export function secondFactorKeys(name: string): SecondFactorKeys {
  const prefix = secondFactorPrefix(name);
  return { totp: `${prefix}totp`, recoveryCodes: `${prefix}recoveryCodes`, passkeys: `${prefix}passkeys` };
}
