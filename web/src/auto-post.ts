/**
 * The identity provider's "continue" page (SAML HTTP-POST binding): sends its form on at once.
 * A file of its own because the pages allow no inline script; without JavaScript the page's
 * button does the same.
 */
const form = document.querySelector<HTMLFormElement>('form[data-auto-post]');
form?.submit();
