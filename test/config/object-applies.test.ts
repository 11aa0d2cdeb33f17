/** When each ConfigMap and Secret was last taken into force. */
import { expect } from 'chai';
import { createObjectApplies } from '../../src/config/object-applies.js';
import type { StoreSnapshot } from '../../src/config/manifests.js';

function snapshot(cm: Record<string, string>, secret: Record<string, string> = { k: 'v' }): StoreSnapshot {
  return {
    configMaps: new Map([['svc-cm', { name: 'svc-cm', file: 'a.yaml', data: cm }]]),
    secrets: new Map([['svc-secret', { name: 'svc-secret', file: 'b.yaml', labels: {}, data: secret }]]),
    applications: [],
  };
}

describe('object applies', () => {
  it('stamps every object at start, then only the objects whose content changed', () => {
    const applies = createObjectApplies();
    applies.record(snapshot({ a: '1' }), 1000);
    applies.record(snapshot({ a: '2' }), 2000);
    expect(applies.current()).to.deep.equal([
      { kind: 'ConfigMap', name: 'svc-cm', at: 2000 },
      { kind: 'Secret', name: 'svc-secret', at: 1000 },
    ]);
  });

  it('leaves an object whose content in force is the same (a refused file keeps the last good one) as it was', () => {
    const applies = createObjectApplies();
    applies.record(snapshot({ a: '1' }), 1000);
    applies.record(snapshot({ a: '1' }), 3000);
    expect(applies.current().map((a) => a.at)).to.deep.equal([1000, 1000]);
  });

  it('forgets an object that is gone', () => {
    const applies = createObjectApplies();
    applies.record(snapshot({ a: '1' }), 1000);
    applies.record({ ...snapshot({ a: '1' }), secrets: new Map() }, 2000);
    expect(applies.current()).to.deep.equal([{ kind: 'ConfigMap', name: 'svc-cm', at: 1000 }]);
  });
});
