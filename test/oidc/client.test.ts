import { expect } from 'chai';
import { secretBasic, warnAboutProvider } from '../../src/oidc/client.js';
import { describeFailure } from '../../src/lib/tls-fetch.js';
import type { SsoProvider } from '../../src/oidc/provider.js';

const provider = (issuer: string, insecureSkipVerify: boolean) => ({ issuer, tls: { rootCA: undefined, insecureSkipVerify } }) as unknown as SsoProvider;

function warnings(p: SsoProvider): string[] {
  const lines: string[] = [];
  warnAboutProvider(p, { warn: (_o: unknown, msg?: string) => void lines.push(msg ?? '') } as never);
  return lines;
}

describe('provider connection', () => {
  it('warns at start about a plain http issuer and about the skip switch, and about nothing else', () => {
    expect(warnings(provider('https://idp.example.com', false))).to.deep.equal([]);
    expect(warnings(provider('http://127.0.0.1:5556', false))).to.deep.equal(['the OIDC issuer is plain http: tokens and codes travel unencrypted']);
    expect(warnings(provider('https://idp.example.com', true))).to.deep.equal(['oidc.tls.insecure.skip.verify is true: the certificate of the OIDC provider is NOT verified']);
  });

  it('names a certificate failure from the innermost cause', () => {
    const inner = Object.assign(new Error('unable to verify the first certificate'), { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' });
    const outer = new Error('fetch failed', { cause: new Error('wrapped', { cause: inner }) });
    expect(describeFailure(outer)).to.equal('certificate verification failed: UNABLE_TO_VERIFY_LEAF_SIGNATURE: unable to verify the first certificate');
    expect(describeFailure(new Error('plain'))).to.equal('plain');
  });

  it('stops at the last Error cause: a response body or claim object there is no message', () => {
    const err = Object.assign(new Error('server responded with an error', { cause: { error: 'invalid_client' } }), { code: 'OAUTH_RESPONSE_BODY_ERROR' });
    expect(describeFailure(err)).to.equal('OAUTH_RESPONSE_BODY_ERROR: server responded with an error');
  });

  it('sends client_secret_basic escaped as Go does: unreserved characters stay, others are escaped', () => {
    const headers = new Headers();
    secretBasic('svc-cli', "my-secret_1.0~ +&!")({} as never, {} as never, new URLSearchParams(), headers);
    const decoded = Buffer.from((headers.get('authorization') ?? '').replace(/^Basic /, ''), 'base64').toString();
    expect(decoded).to.equal('svc-cli:my-secret_1.0~+%2B%26%21');
  });
});
