/**
 * Parses the rights config (svc-rbac-cm) into a validated `Policy`. Parsing opens nothing and has
 * no side effects, so `svc-server validate` can call it.
 *
 * Lines come from `policy.csv`, then every `policy.<x>.csv` overlay in sorted key order (as Argo
 * CD). A malformed line is one problem naming its key and line number, and only that line is
 * dropped. Argo CD instead fails the whole policy, so one typo denies everything to everyone
 * (reference/argocd.md §8.8); here the rest keeps working and the operator sees every bad line.
 */
import type { ScopedSink } from '../config/problems.js';
import YAML from 'yaml';
import { splitCsvLine } from './csv-line.js';

export type Effect = 'allow' | 'deny';

export type PolicyRule =
  | {
      readonly kind: 'p';
      readonly sub: string;
      readonly res: string;
      readonly act: string;
      readonly obj: string;
      readonly eft: Effect;
    }
  | { readonly kind: 'g'; readonly member: string; readonly role: string };

export interface Policy {
  /** The operator's rules in load order; the built-in roles are added by the enforcer. */
  readonly lines: readonly PolicyRule[];
  /** `policy.default`: the role of a subject no rule speaks about. */
  readonly defaultRole?: string;
  /** Token claims whose values are a user's groups (`scopes`, default `[groups]`). */
  readonly scopes: readonly string[];
}

export interface PolicyInput {
  /** `policy.csv` */
  readonly csv?: string | undefined;
  /** The other data keys; those named `policy.<x>.csv` are overlays, the rest are ignored here. */
  readonly overlays?: Readonly<Record<string, string>> | undefined;
  /** `policy.default` */
  readonly defaultRole?: string | undefined;
  /** `scopes`: YAML or JSON list text. */
  readonly scopes?: string | undefined;
}

export const POLICY_CSV_KEY = 'policy.csv';
export const DEFAULT_SCOPES: readonly string[] = ['groups'];
const OVERLAY_KEY = /^policy\..+\.csv$/;

export const EMPTY_POLICY: Policy = { lines: [], scopes: DEFAULT_SCOPES };

export function parsePolicy(input: PolicyInput, sink: ScopedSink): Policy {
  const lines: PolicyRule[] = [];
  if (input.csv !== undefined) lines.push(...parsePolicyCsv(input.csv, sink.at(POLICY_CSV_KEY)));
  const overlayKeys = Object.keys(input.overlays ?? {})
    .filter((key) => OVERLAY_KEY.test(key) && key !== POLICY_CSV_KEY)
    .sort();
  for (const key of overlayKeys) {
    lines.push(...parsePolicyCsv(input.overlays?.[key] ?? '', sink.at(key)));
  }
  const defaultRole = input.defaultRole?.trim() ?? '';
  const scopes = input.scopes === undefined ? DEFAULT_SCOPES : parseScopes(input.scopes, sink.at('scopes'));
  return defaultRole === '' ? { lines, scopes } : { lines, defaultRole, scopes };
}

/** One CSV text; `sink` is already scoped to its data key. */
export function parsePolicyCsv(text: string, sink: ScopedSink): PolicyRule[] {
  const rules: PolicyRule[] = [];
  text.split('\n').forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const parsed = parseLine(line);
    if (typeof parsed === 'string') sink.add([`line ${index + 1}`], `${parsed}, line ignored: ${JSON.stringify(line)}`);
    else rules.push(parsed);
  });
  return rules;
}

/** A rule, or a sentence saying what is wrong with the line. */
function parseLine(line: string): PolicyRule | string {
  const split = splitCsvLine(line);
  if (!split.ok) return split.error;
  const [kind, ...fields] = split.fields;
  const empty = fields.findIndex((field) => field === '');
  if (kind === 'p') {
    if (fields.length !== 4 && fields.length !== 5) {
      return `a p line has 5 or 6 fields (p, subject, resource, action, object[, allow|deny]), found ${fields.length + 1}`;
    }
    if (empty >= 0) return `field ${empty + 2} is empty`;
    const [sub = '', res = '', act = '', obj = '', eft = 'allow'] = fields;
    if (eft !== 'allow' && eft !== 'deny') return `the effect must be allow or deny, not ${JSON.stringify(eft)}`;
    return { kind: 'p', sub, res, act, obj, eft };
  }
  if (kind === 'g') {
    if (fields.length !== 2) return `a g line has 3 fields (g, user-or-group, role), found ${fields.length + 1}`;
    if (empty >= 0) return `field ${empty + 2} is empty`;
    const [member = '', role = ''] = fields;
    return { kind: 'g', member, role };
  }
  return `unknown line type ${JSON.stringify(kind)} (expected p or g)`;
}

function parseScopes(text: string, sink: ScopedSink): readonly string[] {
  let value: unknown;
  try {
    value = YAML.parse(text) as unknown;
  } catch (err: unknown) {
    const reason = err instanceof Error ? (err.message.split('\n')[0] ?? '') : String(err);
    sink.add([], `YAML does not parse (${reason}); using ${JSON.stringify(DEFAULT_SCOPES)}`);
    return DEFAULT_SCOPES;
  }
  if (value === null || value === undefined) return DEFAULT_SCOPES;
  if (!Array.isArray(value) || !value.every((s): s is string => typeof s === 'string' && s.trim() !== '')) {
    sink.add([], `must be a list of claim names, such as [groups]; using ${JSON.stringify(DEFAULT_SCOPES)}`);
    return DEFAULT_SCOPES;
  }
  return value.map((s) => s.trim());
}
