/** requestTarget reads every request target as Koa does (ctx.path, ctx.querystring). */
import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { expect } from 'chai';
import fc from 'fast-check';
import Koa from 'koa';
import { requestTarget } from '../../src/http/request-target.js';

const app = new Koa();

/** What Koa reads, or undefined where it throws (Node's url.parse refuses the target). */
function koaReads(url: string): { path: string; query: string } | undefined {
  const req = new IncomingMessage(new Socket());
  req.url = url;
  req.headers = { host: 'svc.example' };
  const ctx = app.createContext(req, {} as never);
  try {
    // Koa gives null for a target without a path (never sent by a real client); we give ''.
    return { path: ctx.path ?? '', query: ctx.querystring };
  } catch {
    return undefined;
  }
}

describe('requestTarget (the path and query before Koa)', () => {
  const piece = fc.constantFrom('/', '?', '#', ' ', '\t', '%2e', '..', 'a', 'é', '\u00a0', '\ufeff', '&', '=', 'http://h', 'http://[', '//', ';', ':');

  it('agrees with Koa on 10,000 generated targets, origin-form, absolute-form and odd ones, and refuses what Koa throws on', () => {
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), fc.boolean(), (pieces, rooted) => {
        const url = (rooted ? '/' : '') + pieces.join('');
        expect(requestTarget({ url }), url).to.deep.equal(koaReads(url));
      }),
      { numRuns: 10_000 },
    );
  });

  it('splits the common form itself', () => {
    expect(requestTarget({ url: '/api/v1/extensions/x/y?a=1&b=2?c' })).to.deep.equal({ path: '/api/v1/extensions/x/y', query: 'a=1&b=2?c' });
    expect(requestTarget({ url: '/api/v1/extensions/x' })).to.deep.equal({ path: '/api/v1/extensions/x', query: '' });
    expect(requestTarget({ url: 'http://svc.example/api/v1/extensions/x?q' })).to.deep.equal({ path: '/api/v1/extensions/x', query: 'q' });
    expect(requestTarget({ url: 'http://[/api/v1/extensions/x' })).to.equal(undefined);
  });
});
