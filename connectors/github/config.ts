/**
 * The `github` connector's config: Dex's keys (dex.md §2.3), checked strictly. Differences from
 * Dex: `redirectURI` is refused (the callback is always `<url>/api/idp/callback`), and `rootCA` is
 * PEM text or a secret reference to it, never a file path.
 */
import { z } from 'zod';
import type { ParseInput } from '../connector.js';
import { flag, isSet, parseTypeConfig, pemCertificates, text, textList, type CrossCheck } from '../config-schema.js';

export const TEAM_NAME_FIELDS = ['name', 'slug', 'both'] as const;
/** Groups are `<org>:<team name>`, as Dex does by default. */
export const DEFAULT_TEAM_NAME_FIELD = 'name';

const org = z.strictObject({
  name: text,
  /** Only these teams of the org may log in (and become groups); without it, any member. */
  teams: textList.optional(),
});

export const githubConfigSchema = z.strictObject({
  clientID: text,
  clientSecret: text,
  /** Organizations whose members (or listed teams) may log in. */
  orgs: z.array(org).optional(),
  /** Dex's legacy single org; groups are then team names without the org. */
  org: text.optional(),
  /** GitHub Enterprise host, with a port if it is not 443 (API under https://<hostName>/api/v3). */
  hostName: text.refine(isHostAndPort, 'must be a host name with an optional :port, without a scheme or "/"').optional(),
  /** Added to the system roots for the Enterprise host; needs hostName. */
  rootCA: pemCertificates.optional(),
  teamNameField: z.enum(TEAM_NAME_FIELDS).default(DEFAULT_TEAM_NAME_FIELD),
  /** Without orgs: every org and org:team of the user becomes a group (when groups are asked for). */
  loadAllGroups: flag.default(false),
  /** The user id is the login instead of the numeric id. */
  useLoginAsID: flag.default(false),
  /** Pick the verified email in this domain (`*` matches one label). */
  preferredEmailDomain: text.refine((v) => !v.endsWith('*'), 'must not end with "*"').optional(),
});

/** `host`, `host:port` or `[v6]:port`: what goes between `https://` and the path. */
function isHostAndPort(value: string): boolean {
  // URL.canParse refuses a port past 65535.
  return /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/.test(value) && URL.canParse(`https://${value}/`);
}

export type GithubConfig = Readonly<z.output<typeof githubConfigSchema>>;

const checkGithubConfig: CrossCheck = (raw, at) => {
  if (isSet(raw, 'org') && isSet(raw, 'orgs')) at.add(['org'], 'cannot be combined with orgs: list it under orgs');
  if (isSet(raw, 'rootCA') && !isSet(raw, 'hostName')) at.add(['rootCA'], 'needs hostName: it verifies a GitHub Enterprise host');
};

/** The checked config, or undefined after reporting every problem to `input.at`. */
export function parseGithubConfig(input: ParseInput): GithubConfig | undefined {
  return parseTypeConfig(githubConfigSchema, input, checkGithubConfig);
}
