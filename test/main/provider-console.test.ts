/** oidc-provider's console notices and warnings go into svc's JSON log; other console lines pass through. */
import { expect } from 'chai';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { routeProviderConsole } from '../../src/main/provider-console.js';

function logTo(lines: Record<string, unknown>[]) {
  return pino({ level: 'debug' }, new Writable({ write(c: Buffer, _e, done) { lines.push(JSON.parse(c.toString()) as Record<string, unknown>); done(); } }));
}

describe('main/provider-console: oidc-provider warnings in the log', function () {
  it("routes the provider's WARNING and NOTICE lines to warn and info, and passes other lines on", async function () {
    // The provider's own helper (it has no types), so the test writes exactly what the provider writes.
    const helper: string = 'oidc-provider/lib/helpers/attention.js';
    const attention = (await import(helper)) as { warn(s: string): void; info(s: string): void };
    const lines: Record<string, unknown>[] = [];
    const passed: unknown[][] = [];
    const saved = { warn: console.warn, info: console.info };
    console.warn = (...args: unknown[]) => passed.push(['warn', ...args]);
    console.info = (...args: unknown[]) => passed.push(['info', ...args]);
    try {
      const unroute = routeProviderConsole(logTo(lines));
      attention.warn('Unsupported runtime. Use Node.js v22.x LTS, or a later LTS release.');
      attention.info('default clientBasedCORS function called, you SHOULD change it.');
      console.warn('something else', 1);
      unroute();
      attention.warn('after');
    } finally {
      console.warn = saved.warn;
      console.info = saved.info;
    }
    expect(lines.map((l) => [l['level'], l['source'], l['msg']])).to.deep.equal([
      [40, 'oidc-provider', 'identity provider (oidc-provider): Unsupported runtime. Use Node.js v22.x LTS, or a later LTS release.'],
      [30, 'oidc-provider', 'identity provider (oidc-provider): default clientBasedCORS function called, you SHOULD change it.'],
    ]);
    expect(passed).to.deep.equal([['warn', 'something else', 1], ['warn', 'oidc-provider WARNING: after']]);
  });
});
