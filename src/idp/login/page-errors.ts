/**
 * The login pages' own failures, as the login app's outermost middleware: a page for the person,
 * the details in the log. A route that has handed the response to the provider
 * (`ctx.respond = false`) must do so only once the provider has answered, or a failure caught
 * here is answered to nobody (test/idp/storage/storage-unavailable.test.ts).
 */
import type Koa from 'koa';
import type { Logger } from 'pino';
import { setPageHeaders } from '../../http/security-headers.js';
import { FormTooLarge } from './form-body.js';
import { errorPage } from './pages.js';

export function pageErrors(log: Logger): Koa.Middleware {
  return async function loginPageErrors(ctx, next) {
    try {
      await next();
    } catch (err: unknown) {
      if (err instanceof FormTooLarge) {
        // The unread rest of the body (and anything pipelined behind it) is not a request: close.
        log.info({ path: ctx.path, reason: err.message }, 'identity provider: a form over the size limit was refused');
        ctx.status = 413;
        ctx.set('Connection', 'close');
        ctx.type = 'html';
        setPageHeaders(ctx, 'idp');
        ctx.body = errorPage('Login failed', 'The form sent was too large. Go back to the application and try again.');
        return;
      }
      log.error({ err, path: ctx.path }, 'identity provider: a login page failed');
      ctx.status = 500;
      ctx.type = 'html';
      setPageHeaders(ctx, 'idp');
      ctx.body = errorPage('Login failed', 'Something went wrong on our side. Go back to the application and try again.');
    }
  };
}
