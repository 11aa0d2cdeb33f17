import { expect } from 'chai';
import { handshakeApplication } from '../../src/extensions/handshake-application.js';
import { InvalidRequest } from '../../src/errors.js';

describe('handshakeApplication', () => {
  it('reads the header when the query names no application, and keeps the query as is', () => {
    expect(handshakeApplication('argocd/app-a', '')).to.deep.equal({ application: 'argocd/app-a', query: '' });
    expect(handshakeApplication('', 'a=1&b=%2F+x&&c')).to.deep.equal({ application: '', query: 'a=1&b=%2F+x&&c' });
  });

  it('takes the parameter out of the query, leaving the rest byte for byte', () => {
    expect(handshakeApplication('', 'svc-application-name=argocd%2Fapp-a')).to.deep.equal({ application: 'argocd/app-a', query: '' });
    expect(handshakeApplication('', 'x=%41+b&svc-application-name=argocd/app-a&y')).to.deep.equal({ application: 'argocd/app-a', query: 'x=%41+b&y' });
  });

  it('reads the key and the value as URLSearchParams would', () => {
    expect(handshakeApplication('', 'svc%2Dapplication%2dname=argocd%2fapp-a&z=1')).to.deep.equal({ application: 'argocd/app-a', query: 'z=1' });
    // '+' is a space in a query: the name is then not a valid one, which access.ts refuses.
    expect(handshakeApplication('', 'svc-application-name=a+b').application).to.equal('a b');
    expect(handshakeApplication('', 'svc-application-name')).to.deep.equal({ application: '', query: '' });
    // A key that merely contains the name, or differs in case, is the backend's.
    expect(handshakeApplication('', 'my-svc-application-name=x&SVC-APPLICATION-NAME=y')).to.deep.equal({ application: '', query: 'my-svc-application-name=x&SVC-APPLICATION-NAME=y' });
  });

  it('accepts the header and the parameter when they agree, and an empty parameter as naming nothing', () => {
    expect(handshakeApplication('argocd/app-a', 'svc-application-name=argocd%2Fapp-a&q=1')).to.deep.equal({ application: 'argocd/app-a', query: 'q=1' });
    expect(handshakeApplication('argocd/app-a', 'svc-application-name=&q=1')).to.deep.equal({ application: 'argocd/app-a', query: 'q=1' });
  });

  it('refuses a conflict, a repeated parameter and malformed encoding, saying which', () => {
    const refusal = (header: string, query: string) => {
      const { application } = handshakeApplication(header, query);
      return application instanceof InvalidRequest ? application.message : 'accepted';
    };
    expect(refusal('argocd/app-a', 'svc-application-name=argocd/app-b')).to.equal(
      "the Svc-Application-Name header ('argocd/app-a') and the svc-application-name query parameter ('argocd/app-b') name different applications",
    );
    expect(refusal('', 'svc-application-name=a/b&svc-application-name=a/b')).to.equal('the query names the application 2 times (svc-application-name); name it once');
    expect(refusal('', 'svc-application-name=%E0%A4%A')).to.equal('the svc-application-name query parameter has malformed percent-encoding');
    // A malformed key is not ours: it goes to the backend untouched.
    expect(refusal('', '%E0%A4%A=1')).to.equal('accepted');
  });
});
