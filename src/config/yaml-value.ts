/** Parses a data key that holds YAML text; a parse failure is one problem naming the key. */
import YAML from 'yaml';
import type { ScopedSink } from './problems.js';
import { yamlErrorReason } from './yaml-errors.js';

export type YamlValue = { readonly ok: true; readonly value: unknown } | { readonly ok: false };

export function parseYamlValue(text: string, sink: ScopedSink): YamlValue {
  try {
    return { ok: true, value: YAML.parse(text, { logLevel: 'error', prettyErrors: false }) as unknown };
  } catch (err: unknown) {
    // Never the library's message as is: some quote the text, which may be a secret (./yaml-errors.ts).
    sink.add([], `YAML does not parse, the previous value stays in force: ${yamlErrorReason(err, text, sink.valueOrigin())}`);
    return { ok: false };
  }
}
