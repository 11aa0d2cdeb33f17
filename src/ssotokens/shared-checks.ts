/**
 * The group checks of personal API tokens' users as replicas share them: one sealed value per
 * user in the state backend (`ssotokens:check:<record key>`), so that one replica's check
 * spares the others a question to the directory within the interval. Sealed, as the provider's
 * own account records are: whoever reads the state backend learns no one's groups. A backend
 * that cannot answer costs only that sharing: the caller asks the connector itself.
 */
import type { Logger } from 'pino';
import type { Sealer } from '../lib/sealed.js';
import { describeFailure } from '../lib/tls-fetch.js';
import type { StateBackend } from '../state/state.js';
import { recordKeyOf } from './records.js';

export interface Confirmed {
  readonly groups: readonly string[];
  /** When the upstream last confirmed the user (ms). */
  readonly checkedAt: number;
}

export interface SharedChecks {
  read(sub: string): Promise<Confirmed | undefined>;
  write(sub: string, confirmed: Confirmed, ttlMs: number): Promise<void>;
}

const checkKey = (sub: string): string => `ssotokens:check:${recordKeyOf(sub)}`;

export function createSharedChecks(state: StateBackend, sealer: () => Sealer, log: Pick<Logger, 'warn'>): SharedChecks {
  return {
    async read(sub) {
      try {
        const sealed = await state.get(checkKey(sub));
        const text = sealed === null ? undefined : sealer().open(sealed, checkKey(sub));
        if (text === undefined) return undefined;
        const value = JSON.parse(text) as Confirmed;
        return Array.isArray(value.groups) && typeof value.checkedAt === 'number' ? value : undefined;
      } catch (err: unknown) {
        log.warn({ reason: describeFailure(err) }, 'personal API tokens: the shared group check cannot be read; asking the connector');
        return undefined;
      }
    },
    async write(sub, confirmed, ttlMs) {
      try {
        await state.set(checkKey(sub), sealer().seal(JSON.stringify(confirmed), checkKey(sub)), { ttlMs });
      } catch (err: unknown) {
        log.warn({ reason: describeFailure(err) }, 'personal API tokens: the group check cannot be shared with other replicas now');
      }
    },
  };
}
