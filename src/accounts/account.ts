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
}
