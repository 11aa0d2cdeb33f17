/** Runs a connector config parser as idp.config parsing does, and reads back its problems as text. */
import { readFileSync } from 'node:fs';
import type { ParseInput } from '../../connectors/connector.js';
import type { SecretObject } from '../../src/config/manifests.js';
import { formatProblem, ProblemSink } from '../../src/config/problems.js';
import type { SecretLookup } from '../../src/config/secret-ref.js';

/** A real CA certificate (fixtures/certs/regenerate.sh): PEM text as an operator pastes it. */
export const TEST_CA = readFileSync(new URL('../../fixtures/certs/test-ca.pem', import.meta.url), 'utf8');
export const TEST_CA_BASE64 = Buffer.from(TEST_CA).toString('base64');

/** Where problems of the first connector's config are reported. */
export const AT = 'svc-cm: idp.config: connectors[0].config';

function secretObject(name: string, data: Record<string, string>, labels: Record<string, string>): SecretObject {
  return { name, file: `${name}.yaml`, labels, data };
}

/** svc-secret, a labelled Secret `corp-idp` and an unlabelled one `foreign`. */
export const SECRETS: SecretLookup = new Map([
  ['svc-secret', secretObject('svc-secret', { 'dex.clientSecret': 'from-svc-secret' }, {})],
  ['corp-idp', secretObject('corp-idp', { 'client-secret': 'from-corp-idp', 'ca.crt': TEST_CA }, { 'app.kubernetes.io/part-of': 'svc' })],
  ['foreign', secretObject('foreign', { key: 'nope' }, {})],
]);

export interface Parsed<T> {
  readonly config: T | undefined;
  readonly problems: readonly string[];
}

export function parseWithProblems<T>(parse: (input: ParseInput) => T | undefined, raw: unknown, secrets: SecretLookup = SECRETS): Parsed<T> {
  const sink = new ProblemSink();
  const config = parse({ raw, secrets, at: sink.scoped('svc-cm', ['idp.config', 'connectors', 0, 'config']) });
  return { config, problems: sink.problems.map(formatProblem) };
}
