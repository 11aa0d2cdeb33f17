import { expect } from 'chai';
import { pageHeaders } from '../../../src/http/security-headers.js';
import { autoPostPage, chooserPage, deviceInputPage, errorPage, loopbackConsentPage, passwordPage } from '../../../src/idp/login/pages.js';

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

  it('name the application a login is for, escaped, with its logo; none for svc\'s own clients', function () {
    const application = { name: 'Wiki <b>"', logoUrl: 'https://logos.example.org/w.png?a=1&b="2"' };
    const form = { connectorName: 'Corp', usernameLabel: 'Username', action: '/x', csrf: 'c' };
    const chooser = chooserPage([{ id: 'a', name: 'A', type: 'ldap' }], (id) => `/x/${id}`, application);
    const password = passwordPage({ ...form, application });
    for (const html of [chooser, password]) {
      expect(html).to.contain('Log in to continue to <strong>Wiki &lt;b&gt;&quot;</strong>');
      expect(html).to.contain('src="https://logos.example.org/w.png?a=1&amp;b=&quot;2&quot;"');
      expect(html).to.not.match(/style=|\son[a-z]+=/);
    }
    expect(passwordPage(form)).to.not.contain('continue to');
  });

  it('allow images from the logo\'s origin only on the page that shows it', function () {
    expect(pageHeaders('idp')['Content-Security-Policy']).to.contain("img-src 'self';");
    expect(pageHeaders('idp', 'https://logos.example.org')['Content-Security-Policy']).to.contain("img-src 'self' https://logos.example.org;");
  });

  it('ask about a loopback port naming the application, escaped, and the port', function () {
    const html = loopbackConsentPage({ port: '53117', action: '/api/idp/interaction/u/consent', csrf: 'c', offline: false, application: { name: '<b>Dash</b>' } });
    expect(html).to.include('<title>Allow &lt;b&gt;Dash&lt;/b&gt;? · svc</title>').and.include('port <strong>53117</strong>').and.include('as <strong>&lt;b&gt;Dash&lt;/b&gt;</strong>');
    expect(html).not.to.include('<b>Dash</b>').and.not.include('a refresh token');
    expect(html).to.include('name="decision" value="allow"').and.include('name="decision" value="deny"').and.include('name="csrf" value="c"');
  });
});
