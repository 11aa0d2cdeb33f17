import { expect } from 'chai';
import { formatProblem } from '../../src/config/problems.js';
import type { ConfigMapObject, StoreSnapshot } from '../../src/config/manifests.js';
import { DEFAULT_KEY_ROTATION_MS } from '../../src/idp/key-rotation-section.js';
import { parseSettings } from '../../src/main/settings.js';

function snapshot(cm: Record<string, string>): StoreSnapshot {
  const configMaps = new Map<string, ConfigMapObject>([['svc-cm', { name: 'svc-cm', file: 'cm.yaml', data: cm }]]);
  return { configMaps, secrets: new Map([['svc-secret', { name: 'svc-secret', file: 's.yaml', labels: {}, data: { 'server.secretkey': 'k' } }]]), applications: [] };
}

function parse(value: string | undefined, previous?: ReturnType<typeof parseSettings>['settings']) {
  const { settings, problems } = parseSettings(snapshot(value === undefined ? {} : { 'idp.keyRotation': value }), previous);
  return { ms: settings.idpKeyRotationMs, settings, problems: problems.map(formatProblem) };
}

describe('svc-cm idp.keyRotation', () => {
  it('defaults to 168h, a week', () => {
    expect(DEFAULT_KEY_ROTATION_MS).to.equal(168 * 3_600_000);
    expect(parse(undefined)).to.include({ ms: DEFAULT_KEY_ROTATION_MS });
    expect(parse('').ms).to.equal(DEFAULT_KEY_ROTATION_MS);
  });

  it('takes a duration, and 0 for manual rotation only', () => {
    expect(parse('6h')).to.deep.include({ ms: 6 * 3_600_000, problems: [] });
    expect(parse('1h30m').ms).to.equal(90 * 60_000);
    expect(parse('0')).to.deep.include({ ms: 0, problems: [] });
  });

  it('refuses what is not a duration, naming the key and the value, and keeps the period in force', () => {
    const good = parse('12h').settings;
    const bad = parse('weekly', good);
    expect(bad.problems).to.deep.equal(["svc-cm: idp.keyRotation: 'weekly' is not a duration (for example 168h, 24h; 0 for manual rotation only); the previous value stays in force (at start: '168h')"]);
    expect(bad.ms).to.equal(12 * 3_600_000);
    expect(parse('-1h').problems).to.have.length(1);
    expect(parse('weekly').ms, 'at start: the default, never "manual only"').to.equal(DEFAULT_KEY_ROTATION_MS);
  });

  it('refuses a period under an hour, which would pile up published keys', () => {
    const { ms, problems } = parse('10m');
    expect(problems).to.deep.equal(["svc-cm: idp.keyRotation: '10m' is shorter than 1h: a retired key stays published until its ID tokens expire (24h), so shorter periods pile up keys; use 0 for manual rotation only; the previous value stays in force (at start: '168h')"]);
    expect(ms).to.equal(DEFAULT_KEY_ROTATION_MS);
  });

  it('is a known key (a near miss is pointed at it)', () => {
    expect(parse('1h').problems).to.deep.equal([]);
    expect(parseSettings(snapshot({ 'idp.keyRotaton': '1h' })).problems.map(formatProblem)).to.deep.equal(["svc-cm: idp.keyRotaton: unknown key; did you mean 'idp.keyRotation'?"]);
  });
});
