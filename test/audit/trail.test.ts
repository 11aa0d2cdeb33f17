import { expect } from 'chai';
import { toEcs } from '../../src/audit/ecs.js';
import { withTraceIds, type AuditEvent } from '../../src/audit/trail.js';
import { validAuditLine } from '../helpers/audit-schema.js';

const EVENT: AuditEvent = { category: 'authentication', type: 'start', action: 'login', outcome: 'success', user: { name: 'bob', id: 'bob' } };
const IDS = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331' };

describe('audit events of a traced request (ECS trace.id, span.id)', function () {
  it('adds the active span\'s ids to an event recorded inside a trace, and nothing outside one', function () {
    const recorded: AuditEvent[] = [];
    let active: typeof IDS | undefined = IDS;
    const trail = withTraceIds({ record: (e) => recorded.push(e) }, () => active);
    trail.record(EVENT);
    active = undefined;
    trail.record(EVENT);
    expect(recorded).to.deep.equal([{ ...EVENT, trace: IDS }, EVENT]);
  });

  it('writes them as ECS trace.id and span.id, which the schema accepts', function () {
    const line = toEcs({ ...EVENT, trace: IDS }, 0, { name: 'svc', version: 'test' });
    expect(line['trace']).to.deep.equal({ id: IDS.traceId });
    expect(line['span']).to.deep.equal({ id: IDS.spanId });
    validAuditLine(JSON.stringify(line));
    expect(() => validAuditLine(JSON.stringify({ ...line, trace: { id: 'not-hex' } }))).to.throw();
  });
});
