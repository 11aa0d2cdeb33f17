/**
 * The refresh grants of bench/sso-login.ts, as lean as a load generator can be.
 */
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { Pool } from 'undici';

/** Where refresh grants go, and what the ID tokens they return must say. */
export interface RefreshTarget {
  readonly issuer: string;
  readonly tokenEndpoint: string;
  readonly jwksUri: string;
  readonly clientId: string;
  readonly clientSecret: string;
}

/**
 * The timed refresh grants, as lean as a load generator can be so that the two cores go to the
 * servers: one keep-alive pool, the client's Basic header built once, the answer's fields
 * checked, not the ID token (openid-client did ~1 ms of client CPU per grant here). The last ID
 * token is verified with jose against the published JWKS, issuer and audience.
 */
export class RefreshClient {
  private readonly pool: Pool;
  private readonly path: string;
  private readonly authorization: string;

  constructor(private readonly target: RefreshTarget, connections: number) {
    const endpoint = new URL(target.tokenEndpoint);
    this.pool = new Pool(endpoint.origin, { connections });
    this.path = endpoint.pathname;
    this.authorization = `Basic ${Buffer.from(`${encodeURIComponent(target.clientId)}:${encodeURIComponent(target.clientSecret)}`).toString('base64')}`;
  }

  async refresh(refreshToken: string): Promise<{ refresh_token: string; id_token: string }> {
    const answer = await this.pool.request({
      path: this.path, method: 'POST',
      headers: { authorization: this.authorization, 'content-type': 'application/x-www-form-urlencoded' },
      body: `grant_type=refresh_token&refresh_token=${encodeURIComponent(refreshToken)}`,
    });
    const body = (await answer.body.json()) as Record<string, unknown>;
    if (answer.statusCode !== 200) throw new Error(`refresh answered ${answer.statusCode}: ${JSON.stringify(body)}`);
    const { access_token: access, refresh_token: refresh, id_token: id } = body;
    if (typeof access !== 'string' || access === '' || typeof refresh !== 'string' || typeof id !== 'string') throw new Error('refresh gave no new access, refresh or ID token');
    return { refresh_token: refresh, id_token: id };
  }

  async verify(idToken: string): Promise<void> {
    const jwks = createRemoteJWKSet(new URL(this.target.jwksUri));
    await jwtVerify(idToken, jwks, { issuer: this.target.issuer, audience: this.target.clientId, algorithms: ['RS256'] });
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

