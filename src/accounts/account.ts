/** What a local account is, as the settings give it: the types config.ts parses into and the rest reads. */
export type Capability = 'apiKey' | 'login';

export interface ApiTokenRecord {
  /** The name the owner chose; DELETE …/token/{id} removes by it. */
  readonly id: string;
  /**
   * The random JWT id the token was signed with. Absent in records written before tokens had
   * one (their jti was the id): those match on id, iat and exp, see session/validity.ts.
   */
  readonly jti?: string;
  /** Seconds since the epoch, as in the JWT. */
  readonly iat: number;
  readonly exp?: number;
}

export interface AccountSettings {
  readonly name: string;
  readonly enabled: boolean;
  readonly capabilities: readonly Capability[];
  readonly passwordHash?: string;
  readonly passwordMtime?: Date;
  readonly tokens: readonly ApiTokenRecord[];
  /**
   * svc-secret `<prefix>.sessionsNotBefore`: sessions issued before it are refused (a factor
   * removed or reset, an operator's break-glass). API tokens are not affected.
   */
  readonly sessionsNotBefore?: Date;
  /** The confirmed second factors (svc-secret `mfa.<name>.*`); absent or empty: a password alone logs in. */
  readonly secondFactor?: SecondFactorSettings;
}

/** A passkey as stored: the WebAuthn credential's public part, never anything secret. */
export interface PasskeyRecord {
  /** The credential id, base64url. */
  readonly id: string;
  /** The name its owner gave it. */
  readonly name: string;
  /** The COSE public key, base64url. */
  readonly publicKey: string;
  /** The last signature counter seen; synced passkeys stay at 0. */
  readonly counter: number;
  readonly transports?: readonly string[];
  /** Seconds since the epoch. */
  readonly createdAt: number;
}

export interface SecondFactorSettings {
  /** The TOTP secret sealed under server.secretkey (second-factor/totp-secret.ts); absent: no TOTP. */
  readonly totpSealed?: string;
  /** HMACs of the unused recovery codes (second-factor/recovery-codes.ts). */
  readonly recoveryHashes: readonly string[];
  readonly passkeys: readonly PasskeyRecord[];
}

export const NO_SECOND_FACTOR: SecondFactorSettings = { recoveryHashes: [], passkeys: [] };

/** Whether the account must pass a second step: a confirmed TOTP or at least one passkey (recovery codes alone are not a factor). */
export function hasSecondFactor(account: Pick<AccountSettings, 'secondFactor'>): boolean {
  const factor = factorOf(account);
  return factor.totpSealed !== undefined || factor.passkeys.length > 0;
}

/** The account's factors, none when it has no record of them. */
export function factorOf(account: Pick<AccountSettings, 'secondFactor'>): SecondFactorSettings {
  return account.secondFactor ?? NO_SECOND_FACTOR;
}

/** Nothing stored: no TOTP, no recovery code, no passkey. */
export function isEmptyFactor(factor: SecondFactorSettings): boolean {
  return factor.totpSealed === undefined && factor.recoveryHashes.length === 0 && factor.passkeys.length === 0;
}
