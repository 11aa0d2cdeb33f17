/**
 * The browser's side of passkeys: the server's JSON options (from @simplewebauthn/server) to
 * navigator.credentials and back to JSON, with the browser's own WebAuthn JSON helpers
 * (parseCreationOptionsFromJSON, toJSON), so no base64url code of ours sits in a login page.
 */

type Json = Record<string, unknown>;

interface JsonCredential {
  toJSON(): unknown;
}

interface PublicKeyCredentialJsonHelpers {
  parseCreationOptionsFromJSON(options: Json): PublicKeyCredentialCreationOptions;
  parseRequestOptionsFromJSON(options: Json): PublicKeyCredentialRequestOptions;
}

function helpers(): PublicKeyCredentialJsonHelpers {
  const ctor = (globalThis as unknown as { PublicKeyCredential?: Partial<PublicKeyCredentialJsonHelpers> }).PublicKeyCredential;
  if (ctor?.parseCreationOptionsFromJSON === undefined || ctor.parseRequestOptionsFromJSON === undefined) {
    throw new Error('This browser cannot use passkeys here. Use a code from your authenticator app.');
  }
  return ctor as PublicKeyCredentialJsonHelpers;
}

/** A new passkey for the registration options: the answer as JSON for …/webauthn/register. */
export async function passkeyRegistration(options: Json): Promise<unknown> {
  const credential = await navigator.credentials.create({ publicKey: helpers().parseCreationOptionsFromJSON(options) });
  if (credential === null) throw new Error('No passkey was made.');
  return (credential as unknown as JsonCredential).toJSON();
}

/** A passkey's answer to a login's assertion options, as JSON for POST /api/v1/session. */
export async function passkeyAssertion(options: Json): Promise<unknown> {
  const credential = await navigator.credentials.get({ publicKey: helpers().parseRequestOptionsFromJSON(options) });
  if (credential === null) throw new Error('No passkey answered.');
  return (credential as unknown as JsonCredential).toJSON();
}
