/**
 * The return URL rule lives with the login page's scripts, which run it in the browser, so that
 * the server and the page cannot disagree about it (issue 21).
 */
export { safeReturnUrl } from '../../web/src/return-url.js';
