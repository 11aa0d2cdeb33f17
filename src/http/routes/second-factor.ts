/**
 * /api/v1/account/second-factor/...: the caller enrols, lists and removes its own second
 * factors (second-factor/enrolment.ts, passkeys.ts decide). Thin: parse, call, map.
 *
 * An enrolment answers with the factor's status as this replica wrote it (`status`, as GET
 * answers it): behind a load balancer the page's next GET may reach a replica that has not read
 * the write yet, and would say that no factor is on.
 */
import type Router from '@koa/router';
import { allow, declaredRouter } from '../route-access.js';
import type Koa from 'koa';
import type { Enrolment } from '../../second-factor/enrolment.js';
import type { PasskeyEnrolment } from '../../second-factor/passkey-enrolment.js';
import type { Proof } from '../../second-factor/recent-proof.js';
import type { TrustedProxies } from '../client-address.js';
import { auditSourceOf } from '../audit-source.js';
import { requirePrincipal } from '../auth.js';
import { optionalString, readJson, requireString, type JsonObject } from '../body.js';
import type { AppState } from '../state.js';

const PROOF = 'a session (no API token) and a recent proof: the password, and a code while a factor is on';

export interface SecondFactorRouteDeps {
  readonly enrolment: Enrolment;
  readonly passkeys?: PasskeyEnrolment;
  readonly trustedProxies: TrustedProxies;
}

export function secondFactorRoutes({ enrolment, passkeys, trustedProxies }: SecondFactorRouteDeps): Router<AppState> {
  const router = declaredRouter('/api/v1/account/second-factor');
  const source = (ctx: Koa.ParameterizedContext<AppState>) => auditSourceOf(ctx.req, ctx.state.requestId, trustedProxies);

  router.get('/', allow('enrolment'), function showSecondFactor(ctx) {
    ctx.body = enrolment.status(requirePrincipal(ctx));
  });

  router.post('/totp', allow('enrolment', PROOF), async function startTotp(ctx) {
    const caller = requirePrincipal(ctx);
    const body = await readJson(ctx);
    ctx.set('Cache-Control', 'no-store');
    ctx.body = await enrolment.startTotp(caller, proofOf(body));
  });

  router.post('/totp/confirm', allow('enrolment', 'the session that started the enrolment, and a code of the new secret'), async function confirmTotp(ctx) {
    const caller = requirePrincipal(ctx);
    const body = await readJson(ctx);
    ctx.set('Cache-Control', 'no-store');
    const confirmed = await enrolment.confirmTotp(caller, requireString(body, 'code'), source(ctx));
    ctx.body = { ...confirmed, status: enrolment.status(caller) };
  });

  router.delete('/totp', allow('enrolment', PROOF), async function removeTotp(ctx) {
    const caller = requirePrincipal(ctx);
    const body = await readJson(ctx);
    await enrolment.removeTotp(caller, proofOf(body), source(ctx));
    ctx.body = {};
  });

  router.post('/recovery-codes', allow('enrolment', PROOF), async function regenerateRecoveryCodes(ctx) {
    const caller = requirePrincipal(ctx);
    const body = await readJson(ctx);
    ctx.set('Cache-Control', 'no-store');
    ctx.body = await enrolment.regenerateRecoveryCodes(caller, proofOf(body), source(ctx));
  });

  if (passkeys !== undefined) {
    router.post('/webauthn/register-options', allow('enrolment', PROOF), async function passkeyOptions(ctx) {
      const caller = requirePrincipal(ctx);
      ctx.body = await passkeys.registrationOptions(caller, proofOf(await readJson(ctx)));
    });

    router.post('/webauthn/register', allow('enrolment', 'the session that asked for the options, and the authenticator\'s answer'), async function registerPasskey(ctx) {
      const caller = requirePrincipal(ctx);
      const body = await readJson(ctx);
      ctx.set('Cache-Control', 'no-store');
      const added = await passkeys.register(caller, { name: requireString(body, 'name'), response: body['response'] }, source(ctx));
      ctx.body = { ...added, status: enrolment.status(caller) };
    });

    router.delete('/webauthn/:id', allow('enrolment', PROOF), async function removePasskey(ctx) {
      const caller = requirePrincipal(ctx);
      const body = await readJson(ctx);
      await passkeys.remove(caller, ctx.params['id'] ?? '', proofOf(body), source(ctx));
      ctx.body = {};
    });
  }

  return router;
}

/**
 * The recent proof a change of factor takes: `password`, and `code` while a factor is on. Both
 * optional here: the domain refuses a missing one (recent-proof.ts), after it has refused callers
 * that may not change a factor at all (API tokens).
 */
function proofOf(body: JsonObject): Proof {
  return { password: optionalString(body, 'password'), code: optionalString(body, 'code') };
}
