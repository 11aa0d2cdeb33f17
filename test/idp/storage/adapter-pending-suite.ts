/**
 * The adapter's part of the bound on pending logins, over each state backend (adapter.test.ts):
 * an Interaction or DeviceCode is charged to the source of the request before it is written,
 * refused past the bound with nothing written, and gives its share back when destroyed or
 * consumed. Each test counts under a source of its own, so a shared Redis needs no flush.
 */
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { AdapterConstructor } from 'oidc-provider';
import { createStateAdapterClass } from '../../../src/idp/storage/adapter.js';
import { createIdRefs, recordKey } from '../../../src/idp/storage/adapter-keys.js';
import { createPendingBound, RECORD_OVERHEAD_BYTES } from '../../../src/idp/storage/pending-bound.js';
import type { StateBackend } from '../../../src/state/state.js';

const SECRET = 'adapter-pending-suite-secret-key';
const ref = createIdRefs(SECRET);
/** Room for two records like the ones below (about 500 bytes each as stored), not three. */
const PER_SOURCE = 2 * (550 + RECORD_OVERHEAD_BYTES);

export function runAdapterPendingSuite(name: string, open: () => Promise<StateBackend>): void {
  describe(`idp adapter: the bound on pending logins over ${name}`, function () {
    let state: StateBackend;
    let source = '';
    let Adapter: AdapterConstructor;
    const ns = () => source;
    const payload = (id: string) => ({ jti: id, kind: 'Interaction', params: { client_id: 'svc', state: 'x'.repeat(300) }, exp: 1 });

    beforeEach(async function () {
      state = await open();
      source = `test-${randomUUID()}`;
      const bound = createPendingBound({ state, limits: { perSourceBytes: PER_SOURCE, totalBytes: 1024 ** 3 }, now: Date.now, log: { warn() {} } });
      Adapter = createStateAdapterClass(state, { serverSecretKey: SECRET, pending: { bound, sourceOf: () => source } });
    });
    afterEach(async function () {
      await state.close();
    });

    it('refuses a new interaction past its source\'s share with temporarily_unavailable, writing nothing, and saves an admitted one again freely', async function () {
      const interactions = new Adapter('Interaction');
      await interactions.upsert(`a-${ns()}`, payload(`a-${ns()}`), 600);
      await interactions.upsert(`b-${ns()}`, payload(`b-${ns()}`), 600);
      await interactions.upsert(`a-${ns()}`, { ...payload(`a-${ns()}`), result: { login: { accountId: 'alice' } } }, 600);
      const err = await interactions.upsert(`c-${ns()}`, payload(`c-${ns()}`), 600).catch((e: unknown) => e) as Error & { error?: string; status?: number };
      expect(err.error).to.equal('temporarily_unavailable');
      expect(err.status).to.equal(503);
      expect(await state.get(recordKey('Interaction', ref(`c-${ns()}`)))).to.equal(null);
      source = `other-${source}`;
      await interactions.upsert(`c-${ns()}`, payload(`c-${ns()}`), 600);
    });

    it('gives a destroyed interaction\'s and a consumed device code\'s share back at once', async function () {
      const interactions = new Adapter('Interaction');
      const codes = new Adapter('DeviceCode');
      await interactions.upsert(`a-${ns()}`, payload(`a-${ns()}`), 600);
      await codes.upsert(`d-${ns()}`, { ...payload(`d-${ns()}`), kind: 'DeviceCode', clientId: 'svc-cli' }, 300);
      const refused = await interactions.upsert(`b-${ns()}`, payload(`b-${ns()}`), 600).then(() => 'admitted', () => 'refused');
      expect(refused).to.equal('refused');
      await interactions.destroy(`a-${ns()}`);
      await interactions.upsert(`b-${ns()}`, payload(`b-${ns()}`), 600);
      await codes.consume(`d-${ns()}`);
      await interactions.upsert(`c-${ns()}`, payload(`c-${ns()}`), 600);
    });
  });
}
