import { expect } from 'chai';
import { autoPostPage, chooserPage, deviceInputPage, errorPage } from '../../src/idp/pages.js';

/** oidc-provider 9's device input form (lib/helpers/user_code_form.js), as it hands it over. */
const PROVIDER_FORM = `<form id="op.deviceInputForm" novalidate method="post" action="/api/idp/device">
  <input type="hidden" name="xsrf" value="x5rf"/>
  <input
    value="BCDF-GHJK" type="text" name="user_code" placeholder="Enter code" onfocus="this.select(); this.onfocus = undefined;" autofocus autocomplete="off"></input>
  </form>`;

describe('idp pages', function () {
  it('carry no inline script, style or event handler, and use svc\'s stylesheet', function () {
    const pages = [
      chooserPage([{ id: 'a', name: 'A <b>', type: 'ldap' }], (id) => `/x/${id}`),
      autoPostPage('https://idp.example/sso', { SAMLRequest: 'abc"' }),
      errorPage('Login failed', 'No <script>'),
      deviceInputPage(PROVIDER_FORM, undefined),
    ];
    for (const html of pages) {
      expect(html).to.contain('<link rel="stylesheet" href="/web/style.css">');
      expect(html).to.not.match(/<script>|style=|\son[a-z]+=/);
    }
    expect(pages[1]).to.contain('<script type="module" src="/web/auto-post.js"></script>').and.contain('value="abc&quot;"');
    expect(pages[2]).to.contain('No &lt;script&gt;').and.contain('<a href="/login">');
  });

  it('gives the device code one labelled input, keeping the provider\'s action, CSRF field and code', function () {
    const html = deviceInputPage(PROVIDER_FORM, 'wrong_code');
    expect(html.match(/name="user_code"/g)).to.have.length(1);
    expect(html).to.contain('action="/api/idp/device"').and.contain('name="xsrf" value="x5rf"')
      .and.contain('<label for="user_code">Code</label>').and.contain('id="user_code" name="user_code" value="BCDF-GHJK"')
      .and.contain('That code is not right');
  });
});
