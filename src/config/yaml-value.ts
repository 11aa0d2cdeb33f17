/** Parses a data key that holds YAML text; a parse failure is one problem naming the key. */
import YAML from 'yaml';
import type { ScopedSink } from './problems.js';

export type YamlValue = { readonly ok: true; readonly value: unknown } | { readonly ok: false };

export function parseYamlValue(text: string, sink: ScopedSink): YamlValue {
  try {
    return { ok: true, value: YAML.parse(text, { logLevel: 'error' }) as unknown };
  } catch (err: unknown) {
    sink.add([], `YAML does not parse, the previous value stays in force: ${(err as Error).message.split('\n')[0]}`);
    return { ok: false };
  }
}
