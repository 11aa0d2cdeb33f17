/**
 * A YAML error inside a data value is reported at the file's line: exactly for a literal block
 * (`extension.config: |`), and as the value's line and where the value starts for other scalars.
 */
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { EMPTY_MEMORY, loadDirectory } from '../../src/config/load-dir.js';
import { formatProblem } from '../../src/config/problems.js';
import { parseSettings } from '../../src/main/settings.js';
import { secret, tempConfigDir } from '../helpers/manifests.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

async function problemsOf(svcCm: string): Promise<string[]> {
  const dir = tempConfigDir({ 'svc-cm.yaml': svcCm, 'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': 'value-origin-test-key' }) });
  try {
    const loaded = await loadDirectory(dir, EMPTY_MEMORY);
    return parseSettings(loaded.snapshot).problems.map(formatProblem).map((p) => p.replace(join(dir, 'svc-cm.yaml'), 'svc-cm.yaml'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const HEADER = `# Settings of svc.
apiVersion: v1
kind: ConfigMap
metadata:
  name: svc-cm
data:
  url: http://127.0.0.1:8080
`;

describe('config: the position of a YAML error inside a data value', () => {
  cleanUpTempDirs();
  it('gives the file line and column of an error in a literal block, and the line inside the value', async () => {
    const text = `${HEADER}  extension.config: |
    extensions:
      - name: metrics
        enabled: true
        backend:
          services:
            - url: http://127.0.0.1:9090
            - url: http://127.0.0.1:9091
              url: http://127.0.0.1:9092
`;
    // The repeated key is on line 16 of the file, line 8 of the value, column 15 of the file.
    expect(text.split('\n')[15]).to.contain('url: http://127.0.0.1:9092');
    expect(await problemsOf(text)).to.deep.equal([
      'svc-cm: extension.config: YAML does not parse, the previous value stays in force: Map keys must be unique at line 16, column 15 of svc-cm.yaml (line 8 of the value)',
    ]);
  });

  it('counts from the file for a block after other keys and comments too (idp.config after comments)', async () => {
    const text = `${HEADER}  # single sign-on
  # (connectors below)
  idp.config: |-
    connectors:
      - type: ldap
        id: [corp
`;
    const problems = await problemsOf(text);
    expect(problems).to.have.length(1);
    console.log(problems[0]); expect(problems[0]).to.match(/ at line 1[3-4], column \d+ of svc-cm\.yaml \(line [23] of the value\)$/);
  });

  it('says where a quoted value starts when its lines may be folded', async () => {
    const text = `${HEADER}  extension.config: "extensions: [x"
`;
    expect(await problemsOf(text)).to.deep.equal([
      'svc-cm: extension.config: YAML does not parse, the previous value stays in force: Flow sequence in block collection must be sufficiently indented and end with a ] at line 1, column 15 of the value, which starts at line 8, column 22 of svc-cm.yaml',
    ]);
  });
});
