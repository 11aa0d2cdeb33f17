/**
 * What a session confined to enrolment (Principal.enrolmentOnly: `users.mfa.required` and no
 * second factor yet) may still call: enrolling a factor, its own session (userinfo, logout),
 * and the public reads the pages need. Everything else answers 403
 * second_factor_enrolment_required, admin included. The extension proxy refuses such a caller
 * on its own path (extensions/access.ts).
 */
import type Koa from 'koa';
import { SecondFactorEnrolmentRequired } from '../errors.js';
import type { AppState } from './state.js';

const ALLOWED_API = ['/api/v1/account/second-factor', '/api/v1/session', '/api/v1/settings', '/api/version'];

export function mayEnrolOnly(path: string): boolean {
  if (!path.startsWith('/api/')) return true; // pages and their assets: the account page is where one enrols
  return ALLOWED_API.some((prefix) => path === prefix || path.startsWith(`${prefix}/`));
}

/** Throws SecondFactorEnrolmentRequired for a confined caller outside mayEnrolOnly. */
export function enrolmentGate(ctx: Koa.ParameterizedContext<AppState>): void {
  if (ctx.state.principal?.enrolmentOnly === true && !mayEnrolOnly(ctx.path)) throw new SecondFactorEnrolmentRequired();
}
