/**
 * Parses the rights config (svc-rbac-cm) into a validated `Policy`. Parsing opens nothing and has
 * no side effects, so `svc-server validate` can call it.
 *
 * Lines come from `policy.csv`, then every `policy.<x>.csv` overlay in sorted key order (as Argo
 * CD). A malformed line is one problem naming its key and line number. A key with a bad line
 * keeps its last good version, and the readable new lines may only take access away from it
 * (Policy.restrictTo); on first load, when it has none, only the bad lines are dropped. Argo CD instead fails the whole policy, so one typo denies everything to everyone
 * (reference/argocd.md §8.8); here the other keys and lines keep working and the operator sees
 * every bad line.
 */
import { keptOrAtStart } from '../config/settings.js';
import { expandBraces, MAX_ALTERNATIVES } from './glob.js';
import type { ScopedSink } from '../config/problems.js';
import YAML from 'yaml';
import { yamlErrorReason } from '../config/yaml-errors.js';
import { splitCsvLine } from './csv-line.js';
import { extensionActionProblem } from './methods.js';

const EXTENSIONS_RESOURCE = 'extensions';

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
  /**
   * The last good rules of each CSV data key (`policy.csv`, `policy.<x>.csv`): a key that parsed
   * without a bad line, or the version kept for it. The next parse keeps this version when the
   * key's new text has a malformed line. A key applied in part (bad lines on its first load) is
   * not here: it has no good version yet.
   */
  readonly goodKeys?: ReadonlyMap<string, readonly PolicyRule[]>;
  /**
   * Present when a key kept its previous version because its new text has malformed lines: the
   * readable lines of every key's NEW text (malformed lines dropped). A request is allowed only
   * if `lines` and these lines both allow it, so a bad change can take access away (a removed
   * allow or g line, a new deny line) but never give any (see parseCsvKey).
   */
  readonly restrictTo?: readonly PolicyRule[];
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

/** `policy.<anything>.csv` other than policy.csv itself, as Argo CD reads overlays (dots included). */
export function isOverlayKey(key: string): boolean {
  return key !== POLICY_CSV_KEY && OVERLAY_KEY.test(key);
}

export const EMPTY_POLICY: Policy = { lines: [], scopes: DEFAULT_SCOPES };

/** `previous`: the policy in force, whose good keys and scopes stand in for bad new versions. */
export function parsePolicy(input: PolicyInput, sink: ScopedSink, previous?: Policy): Policy {
  const texts: [string, string][] = [];
  if (input.csv !== undefined) texts.push([POLICY_CSV_KEY, input.csv]);
  const overlayKeys = Object.keys(input.overlays ?? {})
    .filter(isOverlayKey)
    .sort();
  for (const key of overlayKeys) texts.push([key, input.overlays?.[key] ?? '']);
  const lines: PolicyRule[] = [];
  const readable: PolicyRule[] = [];
  let keptAny = false;
  const goodKeys = new Map<string, readonly PolicyRule[]>();
  for (const [key, text] of texts) {
    const kept = previous?.goodKeys?.get(key);
    const rules = parseCsvKey(text, sink.at(key), key, kept);
    lines.push(...rules.rules);
    readable.push(...rules.readable);
    keptAny ||= rules.rules !== rules.readable;
    if (rules.good) goodKeys.set(key, rules.rules);
  }
  const defaultRole = input.defaultRole?.trim() ?? '';
  const scopes = input.scopes === undefined ? DEFAULT_SCOPES : parseScopes(input.scopes, sink.at('scopes'), previous?.scopes);
  const policy: Policy = defaultRole === '' ? { lines, scopes, goodKeys } : { lines, defaultRole, scopes, goodKeys };
  return keptAny ? { ...policy, restrictTo: readable } : policy;
}

interface MalformedLine {
  readonly number: number;
  readonly text: string;
  readonly reason: string;
}

/** Every rule and every malformed line of one CSV text. */
export function parsePolicyCsv(text: string): { rules: PolicyRule[]; malformed: MalformedLine[] } {
  const rules: PolicyRule[] = [];
  const malformed: MalformedLine[] = [];
  text.split('\n').forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const parsed = parseLine(line);
    if (typeof parsed === 'string') malformed.push({ number: index + 1, text: line, reason: parsed });
    else rules.push(parsed);
  });
  return { rules, malformed };
}

/**
 * One data key is one entry (DESIGN §2): with a malformed line, its last good version stays
 * in force, because dropping just that line can open access (a typo in a deny line would remove
 * the deny). But keeping it whole would also keep what the operator just took away (`g, bob,
 * role:all` replaced by a deny line, beside a typo elsewhere), so the readable lines of the new
 * text are returned too, and the enforcer allows only what both allow (Policy.restrictTo): an
 * intersection of grants, which holds whatever the lines do, g chains, denies inherited through a
 * role and `policy.default` included. Rejected: editing the old lines (minus removed allow and g
 * lines, plus new deny lines): a removed g line can carry a deny, and a removed allow line can
 * hand a subject to `policy.default`, so neither is always a restriction. Without a good
 * version (first load) only the bad lines are dropped: failing the whole key would take away
 * every other rule in it instead.
 */
function parseCsvKey(
  text: string,
  sink: ScopedSink,
  key: string,
  kept: readonly PolicyRule[] | undefined,
): { rules: readonly PolicyRule[]; readable: readonly PolicyRule[]; good: boolean } {
  const { rules, malformed } = parsePolicyCsv(text);
  const outcome = `the previous version of ${key} stays in force (at start: the line is ignored)`;
  for (const bad of malformed) sink.add([`line ${bad.number}`], `${bad.reason}, ${outcome}: ${JSON.stringify(bad.text)}`);
  if (malformed.length === 0) return { rules, readable: rules, good: true };
  return kept === undefined ? { rules, readable: rules, good: false } : { rules: kept, readable: rules, good: true };
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
    // Past the limit the matcher takes a pattern literally, which would quietly turn a deny off.
    const unbounded = [res, act, obj].findIndex((field) => expandBraces(field) === undefined);
    if (unbounded >= 0) return `field ${unbounded + 3} expands to more than ${MAX_ALTERNATIVES} alternatives ({…,…} braces); split the rule`;
    // Refused rather than warned: a misspelt method in a deny line would quietly deny nothing.
    const method = res === EXTENSIONS_RESOURCE ? extensionActionProblem(act) : undefined;
    if (method !== undefined) return method;
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

function parseScopes(text: string, sink: ScopedSink, previous: readonly string[] | undefined): readonly string[] {
  const fallback = previous ?? DEFAULT_SCOPES;
  const outcome = keptOrAtStart(`'${DEFAULT_SCOPES.join(', ')}'`);
  let value: unknown;
  try {
    value = YAML.parse(text, { prettyErrors: false }) as unknown;
  } catch (err: unknown) {
    sink.add([], `YAML does not parse (${yamlErrorReason(err, text, sink.valueOrigin())}); ${outcome}`);
    return fallback;
  }
  if (value === null || value === undefined) return DEFAULT_SCOPES;
  if (!Array.isArray(value) || !value.every((s): s is string => typeof s === 'string' && s.trim() !== '')) {
    sink.add([], `must be a list of claim names, such as [groups]; ${outcome}`);
    return fallback;
  }
  return value.map((s) => s.trim());
}
