import { expect } from 'chai';
import { PROVIDER_COOKIE_NAMES } from '../../src/idp/cookie-names.js';
import { responseHeaderList } from '../../src/extensions/headers.js';

const raw = (...pairs: string[]): Buffer[] => pairs.map((p) => Buffer.from(p, 'latin1'));

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
