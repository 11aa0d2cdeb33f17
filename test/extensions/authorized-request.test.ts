/**
 * authorized-request.ts: the client's request read once, the checks deciding on that object, and
 * the frozen object the forwarders send. A change to the client's request after it was read,
 * even while the rights decide, changes nothing that is sent; a handshake that is not a GET is
 * refused before the rights are asked.
 */
import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { expect } from 'chai';
import { InvalidRequest, PermissionDenied, type SvcError } from '../../src/errors.js';
import type { ExtensionConfig } from '../../src/extensions/config.js';
import { authorize, decide, readProxiedRequest, type ProxiedRequest, type RequestKind } from '../../src/extensions/authorized-request.js';
import { AssertionsNotConfigured } from '../../src/extensions/identity-assertion.js';
import type { Principal } from '../../src/principal.js';
import { decisionSettings, READER } from './decision-fixture.js';

const settings = decisionSettings('http://backend.internal:8080/base');

/** A client request as node:http parses one: method, target and raw headers (the parsed ones derived). */
function clientRequest(method: string | undefined, url: string, rawHeaders: readonly string[]): IncomingMessage {
  const req = new IncomingMessage(new Socket());
  if (method !== undefined) req.method = method;
  req.url = url;
  req.rawHeaders = [...rawHeaders];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) req.headers[(rawHeaders[i] as string).toLowerCase()] = rawHeaders[i + 1];
  return req;
}

const TARGET = { name: 'ext3', rest: '/items/42', query: 'x=1' };

/** A `get` line for READER on every project's ext3, recording what was asked; `during` runs while it decides. */
function getLine(during: () => void = () => undefined) {
  const asked: string[] = [];
  return {
    asked,
    allows(principal: Principal, resource: string, action: string, object: string): boolean {
      asked.push(`${resource}, ${action}, ${object}`);
      during();
      return principal.username === READER.username && resource === 'extensions' && action === 'get' && object === '*/ext3';
    },
  };
}

function thrown(run: () => unknown): SvcError {
  try {
    run();
  } catch (err: unknown) {
    return err as SvcError;
  }
  throw new Error('nothing was thrown');
}

const caller = { principal: READER, authError: undefined };

describe('extensions/authorized-request: reading the client request once', () => {
  it('reads method, extension, path, query, application, the headers a backend may see, and where it came from', () => {
    const req = clientRequest('POST', '/api/v1/extensions/ext3/items/42?x=1', [
      'Host', 'svc.example', 'Authorization', 'Bearer t', 'Svc-Application-Name', 'argocd/app-a', 'Svc.Username', 'admin', 'X-Kept', 'a', 'Content-Length', '5',
    ]);
    const read = readProxiedRequest(req, TARGET, 'request');
    expect(read).to.deep.equal({
      kind: 'request', method: 'POST', name: 'ext3', rest: '/items/42', query: 'x=1', application: 'argocd/app-a',
      headers: ['X-Kept', 'a', 'Content-Length', '5'], host: 'svc.example', clientIp: '', protocol: 'http', body: { length: 5 },
    });
  });

  it('declares a body from Content-Length or Transfer-Encoding only, and none for a handshake', () => {
    expect(readProxiedRequest(clientRequest('PUT', '/', ['Transfer-Encoding', 'chunked']), TARGET, 'request').body).to.deep.equal({ length: undefined });
    expect(readProxiedRequest(clientRequest('PUT', '/', ['Content-Length', '0']), TARGET, 'request').body).to.equal(null);
    expect(readProxiedRequest(clientRequest('GET', '/', []), TARGET, 'request').body).to.equal(null);
    expect(readProxiedRequest(clientRequest('GET', '/', ['Content-Length', '5']), TARGET, 'handshake').body).to.equal(null);
  });

  it('takes a missing method as GET, and a missing application, or one given as a list (node:http joins repeats), as none', () => {
    const read = readProxiedRequest(clientRequest(undefined, '/', []), TARGET, 'request');
    expect(read.method).to.equal('GET');
    expect(read.application).to.equal(undefined);
    const listed = clientRequest('GET', '/', []);
    listed.headers['svc-application-name'] = ['argocd/app-a', 'argocd/app-b'];
    expect(readProxiedRequest(listed, TARGET, 'request').application).to.equal(undefined);
    expect(readProxiedRequest(listed, TARGET, 'handshake').application).to.equal('');
  });

  it('reads the application from the query for a handshake only, and takes it out of the query it forwards', () => {
    const target = { name: 'ext3', rest: '/ws', query: 'svc-application-name=argocd%2Fapp-a&x=1' };
    const handshake = readProxiedRequest(clientRequest('GET', '/', []), target, 'handshake');
    expect(handshake).to.include({ application: 'argocd/app-a', query: 'x=1' });
    const plain = readProxiedRequest(clientRequest('GET', '/', []), target, 'request');
    expect(plain).to.include({ application: undefined, query: target.query });
    const conflict = readProxiedRequest(clientRequest('GET', '/', ['Svc-Application-Name', 'argocd/app-b']), target, 'handshake');
    expect(conflict.application).to.be.instanceOf(InvalidRequest);
    expect(readProxiedRequest(clientRequest('GET', '/', ['Svc-Application-Name', 'argocd/app-b']), { ...target, query: '' }, 'handshake').application).to.equal('argocd/app-b');
  });

  it('refuses a handshake that is not a GET, naming the method', () => {
    for (const method of ['DELETE', 'POST', 'PUT', 'PATCH', 'HEAD', 'OPTIONS', 'get']) {
      const err = thrown(() => readProxiedRequest(clientRequest(method, '/', []), TARGET, 'handshake'));
      expect(err, method).to.be.instanceOf(InvalidRequest);
      expect(err.message).to.equal(`a WebSocket handshake must be a GET (RFC 6455), not ${method}: send ${method} requests without Upgrade: websocket`);
    }
    expect(readProxiedRequest(clientRequest('DELETE', '/', []), TARGET, 'request').method).to.equal('DELETE');
  });

  it('is frozen, its headers too: a later change of the client request does not reach it', () => {
    const req = clientRequest('GET', '/', ['X-Kept', 'a']);
    const read = readProxiedRequest(req, TARGET, 'request');
    req.method = 'DELETE';
    req.rawHeaders.push('X-Late', 'b');
    expect(read.method).to.equal('GET');
    expect(read.headers).to.deep.equal(['X-Kept', 'a']);
    expect(Object.isFrozen(read) && Object.isFrozen(read.headers)).to.equal(true);
    expect(Reflect.set(read, 'method', 'DELETE')).to.equal(false);
    expect(read.method).to.equal('GET');
  });
});

describe('extensions/authorized-request: deciding on that object, sending exactly it', () => {
  const kinds: readonly RequestKind[] = ['request', 'handshake'];

  it('asks the rights for the method read, and sends that method, the backend path and the headers', () => {
    for (const kind of kinds) {
      const rights = getLine();
      const request = readProxiedRequest(clientRequest('GET', '/', ['X-Kept', 'a']), TARGET, kind);
      const authorized = authorize(request, caller, settings, rights, undefined);
      expect(rights.asked, kind).to.deep.equal(['extensions, get, */ext3']);
      expect(authorized.request).to.equal(request);
      expect(authorized).to.include({ method: 'GET', path: '/base/items/42?x=1' });
      expect(authorized.url.origin).to.equal('http://backend.internal:8080');
      expect(authorized.route.extension.name).to.equal('ext3');
      const ours = ['x-forwarded-host', '', 'x-forwarded-for', '', 'x-forwarded-proto', 'http', 'svc-username', 'reader', 'svc-user-display-name', 'reader'];
      expect(authorized.headers, kind).to.deep.equal(kind === 'request'
        ? ['X-Kept', 'a', ...ours]
        : ['X-Kept', 'a', 'connection', 'upgrade', 'upgrade', 'websocket', ...ours, 'host', 'backend.internal:8080']);
    }
  });

  it('refuses a method the rights lack, naming it, and asks under that method', () => {
    const rights = getLine();
    const err = thrown(() => authorize(readProxiedRequest(clientRequest('DELETE', '/', []), TARGET, 'request'), caller, settings, rights, undefined));
    expect(err).to.be.instanceOf(PermissionDenied);
    expect(err.message).to.equal("'reader' may not use extension 'ext3' with DELETE: no rights rule allows extensions, *, */ext3 nor extensions, delete, */ext3");
    expect(rights.asked).to.deep.equal(['extensions, delete, */ext3']);
  });

  it('sends what was decided when the client request changes while the rights decide', () => {
    const req = clientRequest('GET', '/api/v1/extensions/ext3/items/42?x=1', ['X-Kept', 'a']);
    const rights = getLine(() => {
      req.method = 'DELETE';
      req.url = '/api/v1/extensions/ext3/admin';
      req.rawHeaders.push('Svc-Username', 'admin', 'X-Late', 'b');
      req.headers['svc-application-name'] = 'argocd/other';
    });
    const authorized = authorize(readProxiedRequest(req, TARGET, 'request'), caller, settings, rights, undefined);
    expect(authorized.method).to.equal('GET');
    expect(authorized.path).to.equal('/base/items/42?x=1');
    expect(authorized.headers).to.not.include('X-Late');
    expect(authorized.headers).to.not.include('admin');
  });

  it('is frozen, its header list too', () => {
    const authorized = authorize(readProxiedRequest(clientRequest('GET', '/', []), TARGET, 'request'), caller, settings, getLine(), undefined);
    expect(Object.isFrozen(authorized) && Object.isFrozen(authorized.headers)).to.equal(true);
    expect(Reflect.set(authorized, 'method', 'DELETE')).to.equal(false);
    expect(authorized.method).to.equal('GET');
    expect(() => (authorized.headers as string[]).push('x', 'y')).to.throw(TypeError);
  });

  it('decide() asks about the same object again (the recheck of an open relay), without the caller it refuses', () => {
    const request: ProxiedRequest = readProxiedRequest(clientRequest('GET', '/', []), TARGET, 'handshake');
    const rights = getLine();
    expect(decide(request, caller, settings, rights).extension.name).to.equal('ext3');
    expect(rights.asked).to.deep.equal(['extensions, get, */ext3']);
    expect(thrown(() => decide(request, { principal: undefined, authError: undefined }, settings, rights)).code).to.equal('unauthenticated');
  });

  it('adds the identity assertion an extension asks for, and refuses to send without a signer', () => {
    const signed: ExtensionConfig = { name: 'ext3', enabled: true, idleConnTimeoutMs: 5_000, contentSecurityPolicy: undefined, identityAssertion: true, services: [{ url: 'http://backend.internal' }] };
    const withAssertion = { ...settings, extensions: [signed] };
    const request = readProxiedRequest(clientRequest('GET', '/', []), TARGET, 'request');
    const authorized = authorize(request, caller, withAssertion, getLine(), (subject) => `signed-for-${subject.principal.username}`);
    expect(authorized.headers.slice(-2)).to.deep.equal(['svc-identity-assertion', 'signed-for-reader']);
    expect(thrown(() => authorize(request, caller, withAssertion, getLine(), undefined))).to.be.instanceOf(AssertionsNotConfigured);
  });
});
