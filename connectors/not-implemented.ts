/**
 * The connector implementations (talking to GitHub, GitLab, an OIDC provider, a SAML IdP) come in
 * a later change; their config schemas and the registry are in place now. Until then a login
 * through one of them fails with this error, which says so, instead of something obscure.
 */
export class ConnectorNotImplemented extends Error {
  constructor(readonly type: string) {
    super(`the ${type} connector is not implemented yet: its configuration is checked, but it cannot sign anyone in`);
    this.name = 'ConnectorNotImplemented';
  }
}
