import { expect } from 'chai';
import { PROVIDER_COOKIE_NAMES } from '../../src/idp/cookie-names.js';
import { forwardHeaders, responseHeaderList, type ForwardContext } from '../../src/extensions/headers.js';

const raw = (...pairs: string[]): Buffer[] => pairs.map((p) => Buffer.from(p, 'latin1'));
/** `a-b-c-d` → `A.b_C-d`: each separator spelled in turn as `.`, `_` and `-`, letters in alternating case. */
const mixedSeparators = (name: string): string =>
  name.split('-').map((part, i) => (i % 2 === 0 ? part.toUpperCase() : part)).reduce((out, part, i) => (i === 0 ? part : `${out}${['.', '_', '-'][(i - 1) % 3] ?? '-'}${part}`), '');

describe('responseHeaderList (backend answer -> client headers)', () => {
  it('keeps case and order, drops hop-by-hop headers and those the Connection header names', () => {
    const { list } = responseHeaderList(
      raw('Content-Type', 'text/plain', 'Connection', 'keep-alive, X-Internal', 'X-Internal', '10.0.0.1', 'Keep-Alive', 'timeout=5', 'Transfer-Encoding', 'chunked', 'X-Public', 'yes'),
      [],
    );
    expect(list).to.deep.equal(['Content-Type', 'text/plain', 'X-Public', 'yes']);
  });

  it('drops a Set-Cookie for our svc.* cookies and keeps the others', () => {
    const { list } = responseHeaderList(raw('Set-Cookie', 'svc.token=planted; Path=/', 'set-cookie', 'theirs=1', 'Set-Cookie', ' SVC.other=x'), []);
    expect(list).to.deep.equal(['set-cookie', 'theirs=1']);
  });

  it("drops a Set-Cookie for every cookie the identity provider is configured with, and their .sig/.legacy variants", () => {
    const planted = Object.values(PROVIDER_COOKIE_NAMES).flatMap((n) => [`${n}=x; Path=/api/idp`, `${n}.sig=x`, `${n}.legacy=x`, `${n}.legacy.sig=x`, ` ${n.toUpperCase()}=x`]);
    const { list } = responseHeaderList(raw(...planted.flatMap((c) => ['Set-Cookie', c]), 'Set-Cookie', '_sessionid=1', 'Set-Cookie', 'a=_session'), []);
    expect(list).to.deep.equal(['Set-Cookie', '_sessionid=1', 'Set-Cookie', 'a=_session']);
    expect(PROVIDER_COOKIE_NAMES).to.include({ session: '_session', interaction: '_interaction', resume: '_interaction_resume' });
  });

  it('adds the extra pairs unless the backend sent that name, in any case', () => {
    expect(responseHeaderList(raw('A', '1'), ['X-Request-Id', 'ours']).list).to.deep.equal(['A', '1', 'X-Request-Id', 'ours']);
    expect(responseHeaderList(raw('x-request-id', 'theirs'), ['X-Request-Id', 'ours']).list).to.deep.equal(['x-request-id', 'theirs']);
  });

  it('reads the declared length and whether the body is an event stream', () => {
    expect(responseHeaderList(raw('Content-Length', '42'), [])).to.include({ contentLength: 42, eventStream: false });
    expect(responseHeaderList(raw('Content-Length', 'nonsense'), []).contentLength).to.equal(undefined);
    expect(responseHeaderList(raw('content-type', 'text/event-stream; charset=utf-8'), [])).to.include({ contentLength: undefined, eventStream: true });
  });

  it("keeps Upgrade on a 101 (node:http's string headers) and drops it otherwise", () => {
    const handshake = ['Upgrade', 'websocket', 'Connection', 'Upgrade', 'Sec-WebSocket-Accept', 'abc'];
    expect(responseHeaderList(handshake, ['connection', 'upgrade'], true).list).to.deep.equal(['Upgrade', 'websocket', 'Sec-WebSocket-Accept', 'abc', 'connection', 'upgrade']);
    expect(responseHeaderList(handshake, ['connection', 'close']).list).to.deep.equal(['Sec-WebSocket-Accept', 'abc', 'connection', 'close']);
  });
});

describe('forwardHeaders (client request -> backend headers)', () => {
  const context: ForwardContext = { host: 'svc.example.org', clientIp: '192.0.2.7', proto: 'https', user: { username: 'alice', groups: ['devs', 'ops'] } };
  const OURS = ['x-forwarded-host', 'svc.example.org', 'x-forwarded-for', '192.0.2.7', 'x-forwarded-proto', 'https', 'svc-username', 'alice', 'svc-user-display-name', 'alice', 'svc-user-groups', 'devs,ops'];
  const pairs = (list: readonly string[]): [string, string][] => Array.from({ length: list.length / 2 }, (_, i) => [list[2 * i] as string, list[2 * i + 1] as string]);

  it('keeps the client\'s other headers in case and order, then adds ours', () => {
    const raw = ['Accept', 'text/html', 'X-Custom', 'a', 'accept-language', 'fr', 'X-Custom', 'b'];
    expect(forwardHeaders(raw, {}, context)).to.deep.equal([...raw, ...OURS]);
  });

  it('drops every hop-by-hop, credential, address and path header, and every X-Forwarded-* and Svc-*, in any case, with _ or . for -', () => {
    const dropped = ['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host', 'expect', 'cookie', 'authorization', 'forwarded', 'x-real-ip', 'http2-settings', 'x-remote-user', 'true-client-ip', 'x-client-ip', 'x-original-url', 'x-rewrite-url', 'x-forwarded-prefix', 'x-forwarded-port', 'svc-username', 'svc-user-display-name', 'svc-user-groups', 'svc-application-name', 'svc-project-name', 'svc-anything'];
    for (const name of dropped) {
      for (const variant of [name, name.toUpperCase(), name.replace(/-/g, '_'), name.replace(/-/g, '.'), mixedSeparators(name)]) {
        expect(forwardHeaders([variant, 'x', 'Kept', '1'], { connection: 'keep-alive' }, context), variant).to.deep.equal(['Kept', '1', ...OURS]);
      }
    }
    // A name that merely contains one of them is kept.
    const kept = ['my-x-forwarded-host', '1', 'x-svc-user', '2', 'cookies', '3', 'hosted', '4'];
    expect(forwardHeaders(kept, {}, context)).to.deep.equal([...kept, ...OURS]);
  });

  it('drops every method override in any spelling: the rights were asked for the method sent', () => {
    for (const name of ['x-http-method-override', 'x-http-method', 'x-method-override']) {
      for (const variant of [name, name.toUpperCase(), name.replace(/-/g, '_'), name.replace(/-/g, '.'), mixedSeparators(name)]) {
        expect(forwardHeaders([variant, 'DELETE', 'Kept', '1'], {}, context), variant).to.deep.equal(['Kept', '1', ...OURS]);
      }
    }
  });

  it('drops the headers the Connection header names, but not for close, keep-alive or upgrade alone', () => {
    const raw = ['Connection', 'x', 'X-Internal', '1', 'X-Other', '2', 'Keep', '3'];
    expect(forwardHeaders(raw, { connection: 'close, X-Internal , ,x_other' }, context)).to.deep.equal(['Keep', '3', ...OURS]);
    expect(forwardHeaders(raw, { connection: 'keep-alive, X-Internal' }, context)).to.deep.equal(['X-Other', '2', 'Keep', '3', ...OURS]);
    for (const connection of ['close', 'keep-alive', 'upgrade', 'close, keep-alive, upgrade', '']) {
      expect(forwardHeaders(raw, { connection }, context), connection).to.deep.equal(['X-Internal', '1', 'X-Other', '2', 'Keep', '3', ...OURS]);
    }
  });

  it('reads close, keep-alive and empty entries in Connection as no header name', () => {
    expect(forwardHeaders(['Close', 'x', 'X-A', '1', 'Keep', '2'], { connection: 'close, X-A' }, context)).to.deep.equal(['Close', 'x', 'Keep', '2', ...OURS]);
  });

  it('sends its own Connection and Upgrade on a WebSocket upgrade only', () => {
    expect(forwardHeaders(['Upgrade', 'websocket', 'Connection', 'Upgrade, X-Ours'], { connection: 'Upgrade, X-Ours' }, { ...context, upgrade: true })).to.deep.equal(['connection', 'upgrade', 'upgrade', 'websocket', ...OURS]);
    expect(forwardHeaders([], {}, { ...context, upgrade: false })).to.deep.equal(OURS);
  });

  it('sends only the groups a header can carry, and no group header without one', () => {
    const list = forwardHeaders([], {}, { ...context, user: { username: 'bob', groups: ['', 'a,b', 'ops', 'é'] } });
    expect(pairs(list).filter(([n]) => n.startsWith('svc-'))).to.deep.equal([['svc-username', 'bob'], ['svc-user-display-name', 'bob'], ['svc-user-groups', 'ops,%C3%A9']]);
    const none = forwardHeaders([], {}, { ...context, user: { username: 'bob', groups: ['', 'a,b'] } });
    expect(pairs(none).map(([n]) => n)).to.not.include('svc-user-groups');
  });

  it('sends an SSO user\'s stable id and readable name apart', () => {
    const list = forwardHeaders([], {}, { ...context, user: { username: 'CgVhbGljZRIEY29ycA', displayName: 'Zoë', groups: [] } });
    expect(pairs(list).filter(([n]) => n.startsWith('svc-'))).to.deep.equal([['svc-username', 'CgVhbGljZRIEY29ycA'], ['svc-user-display-name', 'Zo%C3%AB']]);
  });

  it('names the application and its project when the request named one', () => {
    const list = forwardHeaders([], {}, { ...context, application: { name: 'argocd/app-a', project: 'team-a' } });
    expect(list.slice(-4)).to.deep.equal(['svc-application-name', 'argocd/app-a', 'svc-project-name', 'team-a']);
  });

  it('percent-encodes what is not printable ASCII in the names it sends, a lone surrogate as U+FFFD', () => {
    const list = forwardHeaders([], {}, { ...context, user: { username: 'zoë\r\nx: y\ud800', groups: [] }, application: { name: 'ns/a', project: 'prøj' } });
    const sent = Object.fromEntries(pairs(list));
    expect(sent['svc-username']).to.equal('zo%C3%AB%0D%0Ax: y%EF%BF%BD');
    expect(sent['svc-project-name']).to.equal('pr%C3%B8j');
    expect(forwardHeaders([], {}, { ...context, user: { username: 'plain name ~', groups: [] } })).to.include('plain name ~');
  });
});

describe('responseHeaderList: more of what the backend cannot do', () => {
  it('drops every hop-by-hop header, and the names of every Connection header it sent, in any case', () => {
    const { list } = responseHeaderList(
      raw('Proxy-Connection', 'x', 'TE', 'trailers', 'Trailer', 'X', 'Upgrade', 'h2c', 'Proxy-Authenticate', 'Basic', 'connection', 'X-A', 'Connection', 'x_b', 'X-A', '1', 'X-B', '2', 'Kept', 'yes'),
      [],
    );
    expect(list).to.deep.equal(['Kept', 'yes']);
  });

  it('keeps a Set-Cookie that only mentions svc, adds the extension\'s Content-Security-Policy beside the backend\'s', () => {
    const { list } = responseHeaderList(raw('Set-Cookie', 'mysvc.token=1', 'Set-Cookie', 'a=svc.x', 'Content-Security-Policy', "default-src 'self'"), ['X-Request-Id', 'r1'], false, 'sandbox');
    expect(list).to.deep.equal(['Set-Cookie', 'mysvc.token=1', 'Set-Cookie', 'a=svc.x', 'Content-Security-Policy', "default-src 'self'", 'X-Request-Id', 'r1', 'content-security-policy', 'sandbox']);
  });

  it('drops only the names listed in Connection, not those other hop-by-hop headers carry as values', () => {
    const { list } = responseHeaderList(raw('Trailer', 'X-Checksum', 'Keep-Alive', 'timeout', 'Connection', 'X-A', 'X-Checksum', '1', 'timeout', '2', 'undefined', '3', 'X-A', '4'), []);
    expect(list).to.deep.equal(['X-Checksum', '1', 'timeout', '2', 'undefined', '3']);
  });

  it('protects only Set-Cookie from a value starting with svc.', () => {
    expect(responseHeaderList(raw('X-Note', 'svc.example', 'Link', ' svc.x'), []).list).to.deep.equal(['X-Note', 'svc.example', 'Link', ' svc.x']);
  });

  it('reads an event stream only from Content-Type, and the length only from Content-Length', () => {
    expect(responseHeaderList(raw('Content-Type', 'text/event-stream', 'X-After', 'text/plain'), [])).to.include({ eventStream: true });
    expect(responseHeaderList(raw('X-Type', 'text/event-stream', 'X-Length', '5'), [])).to.include({ eventStream: false, contentLength: undefined });
    expect(responseHeaderList(raw('Content-Type', 'application/json'), [])).to.include({ eventStream: false });
  });
});

describe("forwardHeaders: svc's and other authenticating proxies' identity headers, in every spelling", () => {
  const context: ForwardContext = { host: 'svc.example', clientIp: '10.0.0.9', proto: 'https', user: { username: 'alice', groups: ['devs'] } };
  /** Every name headers.ts drops as an identity or address a backend may trust, and one of each prefix family. */
  const IDENTITY = [
    'svc-identity-assertion', 'svc-username', 'svc-user-groups', 'svc-user-display-name', 'svc-application-name', 'svc-project-name',
    'x-forwarded-user', 'x-forwarded-for', 'x-webauth-user', 'x-auth-request-user', 'x-auth-request-access-token', 'x-remote-user', 'x-remote-group',
    'x-remote-extra-scopes', 'remote-user', 'remote-groups', 'x-amzn-oidc-identity', 'x-goog-authenticated-user-email', 'x-goog-iap-jwt-assertion',
    'x-ms-client-principal-name', 'cf-access-jwt-assertion', 'x-authentik-username', 'true-client-ip', 'x-client-ip', 'x-real-ip', 'x-original-url',
    'x-rewrite-url', 'x-user', 'x-email', 'x-user-email', 'x-user-name', 'x-user-groups', 'x-groups', 'x-auth-user', 'x-auth-username',
    'x-auth-email', 'x-auth-groups', 'x-proxy-user', 'x-authenticated-user', 'x-authenticated-userid', 'x-authenticated-groups',
    'x-consumer-username', 'x-consumer-id', 'x-consumer-custom-id', 'x-credential-identifier', 'x-preferred-username',
  ];

  it('drops each with `.`, `_` and `-` read as one and case ignored (Svc.Identity.Assertion, svc_identity_assertion, X.Remote_User)', () => {
    for (const name of IDENTITY) {
      const spellings = [name, name.toUpperCase(), name.replace(/-/g, '.'), name.replace(/-/g, '_'), mixedSeparators(name), mixedSeparators(name).replace(/_/g, '.')];
      for (const spelling of spellings) {
        const out = forwardHeaders([spelling, 'forged', 'Kept', '1'], {}, context);
        expect(out.slice(0, 2), spelling).to.deep.equal(['Kept', '1']);
        expect(out, spelling).to.not.include('forged');
      }
    }
    expect(mixedSeparators('svc-identity-assertion')).to.equal('SVC.identity_ASSERTION');
  });

  it('keeps names that only differ by other characters, or merely contain an identity name', () => {
    const kept = ['svc~username', '1', 'svcusername', '2', 'x-svc.user', '3', 'my.x.forwarded.for', '4', 'x-user-agent-hint', '5'];
    expect(forwardHeaders(kept, {}, context).slice(0, kept.length)).to.deep.equal(kept);
  });

  it('reads a name the Connection header lists with `.` as `-` too', () => {
    expect(forwardHeaders(['X-Internal-Addr', '10.0.0.1', 'Kept', '1'], { connection: 'X.Internal.Addr' }, context).slice(0, 2)).to.deep.equal(['Kept', '1']);
  });
});

describe('forwardHeaders: Svc-Identity-Assertion', () => {
  const context: ForwardContext = { host: 'svc.example', clientIp: '10.0.0.9', proto: 'https', user: { username: 'alice', groups: ['devs'] } };
  const named = (list: readonly string[], name: string): string[] => list.filter((_, i) => i % 2 === 1 && list[i - 1]?.toLowerCase() === name);

  it("drops a client's assertion in any spelling, and sends none unless svc signed one", () => {
    const sent = ['Svc-Identity-Assertion', 'forged.jwt.sig', 'svc_identity_assertion', 'replayed.jwt.sig', 'SVC-IDENTITY-ASSERTION', 'x'];
    const out = forwardHeaders(sent, {}, context);
    expect(named(out, 'svc-identity-assertion')).to.deep.equal([]);
    expect(out.join('\n')).to.not.match(/forged|replayed/);
  });

  it("sends svc's assertion, once, in place of the client's", () => {
    const out = forwardHeaders(['Svc-Identity-Assertion', 'forged.jwt.sig'], {}, { ...context, assertion: 'signed.by.svc' });
    expect(named(out, 'svc-identity-assertion')).to.deep.equal(['signed.by.svc']);
  });
});
