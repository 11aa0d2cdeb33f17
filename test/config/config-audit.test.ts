/** Configuration applied or refused, as audit events: which object, hashes of its content (a Secret: only its changed keys), the problems. */
import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AuditEvent } from '../../src/audit/trail.js';
import { contentHash } from '../../src/config/config-audit.js';
import { accountsConfigDir, editConfigMap, waitFor } from '../helpers/accounts-fixture.js';
import { collectAudit, type CollectedAudit } from '../helpers/audit.js';
import { validAuditEvent } from '../helpers/audit-schema.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

describe('audit trail: configuration applied or refused', function () {
  cleanUpTempDirs();
  this.timeout(20_000);
  let server: TestServer;
  let audit: CollectedAudit;
  let dir: string;

  before(async () => {
    dir = accountsConfigDir();
    audit = collectAudit();
    server = await startTestServer(dir, { audit });
  });
  after(() => server.close());

  async function next(action: string, from: number): Promise<AuditEvent> {
    await waitFor(() => audit.events.slice(from).some((e) => e.action === action), action);
    const event = audit.events.slice(from).find((e) => e.action === action) as AuditEvent;
    validAuditEvent(event);
    return event;
  }

  it('a ConfigMap change: applied, with the hashes of the old and the new content', async () => {
    const before = contentHash(server.services.store.current().configMaps.get('svc-cm')?.data);
    const mark = audit.events.length;
    editConfigMap(dir, (text) => text.replace("users.session.duration: '2h'", "users.session.duration: '3h'").replace('users.session.duration: 2h', 'users.session.duration: 3h'));
    const event = await next('config-applied', mark);
    const after = contentHash(server.services.store.current().configMaps.get('svc-cm')?.data);
    expect(after).to.not.equal(before);
    expect(event).to.deep.equal({ category: 'configuration', type: 'change', action: 'config-applied', outcome: 'success', svc: { object: 'ConfigMap/svc-cm', oldHash: before, newHash: after } });
  });

  it('a bad value: refused, naming the problem; a file that does not parse: refused, naming the file', async () => {
    let mark = audit.events.length;
    editConfigMap(dir, (text) => text.replace(/users\.session\.duration: '?3h'?/, "users.session.duration: 'banana'"));
    const refused = await next('config-refused', mark);
    expect(refused).to.deep.include({ outcome: 'failure' });
    expect(refused.svc?.['object']).to.equal('ConfigMap/svc-cm');
    expect(refused.reason).to.match(/^svc-cm: users\.session\.duration: /);
    mark = audit.events.length;
    writeFileSync(join(dir, 'svc-rbac-cm.yaml'), 'kind: ConfigMap\nmetadata: [unclosed\n');
    const broken = await next('config-refused', mark);
    expect(broken.svc?.['object']).to.match(/svc-rbac-cm\.yaml$/);
    expect(broken.reason).to.be.a('string').and.not.equal('');
  });

  it('a Secret change names the keys that changed, never a hash or a value', async () => {
    const mark = audit.events.length;
    await server.services.store.updateSecret('svc-secret', () => ({ set: { 'operator.extra': 'value-not-to-show' } }));
    const event = await next('config-applied', mark);
    expect(event.svc).to.deep.equal({ object: 'Secret/svc-secret', changedKeys: ['operator.extra'] });
    expect(JSON.stringify(event)).to.not.include('value-not-to-show');
  });
});
