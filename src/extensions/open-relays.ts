/**
 * The WebSockets relayed right now, each with what admitted it: the token, and the question of
 * rights it passed (extension, application, rights rule, backend). Taking access away must cut
 * what is already open, not only refuse the next request: a relay lives for hours, and a
 * logout that leaves it relaying leaves the session usable.
 *
 * Two ways a relay is cut:
 * - its token id is revoked (logout, on this replica or another: revocation.ts hears both): at
 *   once, without asking anything;
 * - the configuration changed (svc-cm, svc-secret, svc-rbac-cm: an account disabled or without the
 *   capability, an API token deleted, a password changed, a rule or an application gone, the
 *   extension switched off): every relay is asked again, its token through the same
 *   authentication as a new request and its route through the same checks (access.ts), and one
 *   that would now be refused is cut. The rights are asked once the new policy answers
 *   (Rights.onUpdate), since its enforcer is built after the change.
 *
 * Cutting destroys both sockets: svc does not parse WebSocket frames, and a close frame written
 * into the middle of a backend frame would corrupt the stream, so the client sees an abnormal
 * closure (1006) and reconnects, which the checks then refuse. Why the check is repeated rather
 * than diffed against the change: which relays a change affects depends on every rule at once
 * (groups, globs, deny rules, the default role); asking again is exact, and relays are few.
 */
import type { Logger } from 'pino';
import type { Principal } from '../principal.js';

export interface OpenRelay {
  /** The token that opened it, as sent. */
  readonly token: string;
  readonly tokenId: string;
  /** Throws when the principal may no longer use this relay (access.ts's checks, as at the handshake). */
  readonly admit: (principal: Principal) => void;
  /** Cuts both sides; `reason` goes to the log. */
  readonly cut: (reason: string) => void;
}

export interface OpenRelays {
  /** Registers an open relay; the result unregisters it (call it when the relay closes). */
  add(relay: OpenRelay): () => void;
  /** Cuts the relays opened with this token id. */
  revoked(tokenId: string): void;
  /** Asks every relay again; cuts those whose token or route would now be refused. */
  recheck(): void;
}

export interface OpenRelaysDeps {
  readonly authenticate: (token: string) => Promise<Principal>;
  readonly log: Pick<Logger, 'info' | 'warn'>;
}

export function createOpenRelays(deps: OpenRelaysDeps): OpenRelays {
  const open = new Set<OpenRelay>();

  function cut(relay: OpenRelay, reason: string): void {
    if (!open.delete(relay)) return;
    deps.log.info({ reason }, 'WebSocket relay cut: its access was taken away');
    relay.cut(reason);
  }

  /** Any failure cuts: a relay stays open only while its access is shown to hold. */
  async function recheckOne(relay: OpenRelay): Promise<void> {
    try {
      relay.admit(await deps.authenticate(relay.token));
    } catch (err: unknown) {
      cut(relay, err instanceof Error ? err.message : String(err));
    }
  }

  return {
    add(relay) {
      open.add(relay);
      return () => void open.delete(relay);
    },
    revoked(tokenId) {
      for (const relay of open) if (relay.tokenId === tokenId) cut(relay, 'token is revoked');
    },
    recheck() {
      for (const relay of open) void recheckOne(relay);
    },
  };
}
