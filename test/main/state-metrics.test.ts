import { expect } from 'chai';
import { Registry } from 'prom-client';
import { registerStateMetrics } from '../../src/main/state-metrics.js';
import type { StateConnection } from '../../src/state/state.js';

describe('state metrics', function () {
  it('shows the connection as the backend reports it at each scrape', async function () {
    const registry = new Registry();
    let now: StateConnection = { connected: true, revived: 0 };
    registerStateMetrics(registry, { connection: () => now });
    const scrape = async () => {
      const text = await registry.metrics();
      return [/^svc_state_backend_connected (\S+)$/m.exec(text)?.[1], /^svc_state_backend_revived_total (\S+)$/m.exec(text)?.[1]];
    };
    expect(await scrape()).to.deep.equal(['1', '0']);
    now = { connected: false, revived: 0 };
    expect(await scrape(), 'while the client is ended').to.deep.equal(['0', '0']);
    now = { connected: true, revived: 2 };
    expect(await scrape(), 'after two revivals').to.deep.equal(['1', '2']);
  });
});
