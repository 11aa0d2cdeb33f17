/**
 * The `gitlab` connector's config: Dex's keys (dex.md §2.4, v2.45.1), checked strictly.
 * Differences from Dex: `redirectURI` is refused (the callback is always
 * `<url>/api/idp/callback`); the CA is `rootCA` (PEM text or a secret reference to it, the name
 * every svc connector uses) or Dex's `rootCAData` (base64 PEM), never a file path.
 */
import { z } from 'zod';
import type { ParseInput } from '../connector.js';
import { atMostOne, base64PemCertificates, flag, httpUrl, parseTypeConfig, pemCertificates, text, textList, type CrossCheck } from '../config-schema.js';

export const DEFAULT_GITLAB_BASE_URL = 'https://gitlab.com';

export const gitlabConfigSchema = z.strictObject({
  /** A self-hosted GitLab's URL. */
  baseURL: httpUrl.default(DEFAULT_GITLAB_BASE_URL),
  clientID: text,
  clientSecret: text,
  /** The user must be in one of these groups (full paths), and groups are filtered to them. */
  groups: textList.optional(),
  /** The user id is the username instead of the numeric id. */
  useLoginAsID: flag.default(false),
  /** Also `<group>:owner`, `:maintainer` or `:developer` as groups. */
  getGroupsPermission: flag.default(false),
  /** Added to the system roots. */
  rootCA: pemCertificates.optional(),
  /** The same as base64 PEM (Dex's form). */
  rootCAData: base64PemCertificates.optional(),
});

export type GitlabConfig = Readonly<z.output<typeof gitlabConfigSchema>>;

const checkGitlabConfig: CrossCheck = (raw, at) => atMostOne(raw, at, 'rootCA', 'rootCAData');

/** The checked config, or undefined after reporting every problem to `input.at`. */
export function parseGitlabConfig(input: ParseInput): GitlabConfig | undefined {
  return parseTypeConfig(gitlabConfigSchema, input, checkGitlabConfig);
}
