/**
 * The account page's second factor: what is enrolled (GET /api/v1/account/second-factor), an
 * authenticator app (POST …/totp shows the secret and its otpauth link, POST …/totp/confirm
 * turns it on and shows the recovery codes once), and passkeys (register-options, then the
 * browser makes one, then register; delete). Starting an enrolment and removing a factor send
 * the password typed in the section, and its code while a factor is on: the server refuses a
 * change of factor with the session alone. After an enrolment the page shows the status the
 * answer carries, not a new GET's: behind a load balancer that GET may reach a replica that has
 * not read the write yet.
 */
import { api, byId } from './api.js';
import { passkeyRegistration } from './webauthn.js';

interface Status {
  readonly totp: boolean;
  readonly passkeys: readonly { readonly id: string; readonly name: string; readonly createdAt: number }[];
  readonly recoveryCodesLeft: number;
  readonly required: boolean;
}

type Say = (text: string, kind: 'error' | 'ok') => void;

interface Proof {
  readonly password: string;
  readonly code?: string;
}

/** Thrown when the section's proof fields are not filled in: said as it is, the field focused. */
class MissingProof extends Error {}

/** The password, and the code when the code field is shown (a factor is on). */
function proofFromFields(): Proof {
  const password = byId<HTMLInputElement>('factor-password');
  const code = byId<HTMLInputElement>('factor-code');
  if (password.value === '') {
    password.focus();
    throw new MissingProof('Type your password first: adding or removing a second factor asks for it.');
  }
  if (byId('factor-code-field').hidden) return { password: password.value };
  if (code.value.trim() === '') {
    code.focus();
    throw new MissingProof('Type a code from your authenticator app, or a recovery code: a second factor is on.');
  }
  return { password: password.value, code: code.value.trim() };
}

/** A code works once and the password is not kept in the page longer than it is needed. */
function clearProofFields(): void {
  byId<HTMLInputElement>('factor-password').value = '';
  byId<HTMLInputElement>('factor-code').value = '';
}

function statusText(status: Status): string {
  const parts = [status.totp ? 'an authenticator app' : '', status.passkeys.length > 0 ? `${status.passkeys.length} passkey${status.passkeys.length === 1 ? '' : 's'}` : ''].filter((p) => p !== '');
  if (parts.length === 0) return status.required ? 'A second factor is required before you can use svc: set one up below.' : 'No second factor: your password alone logs you in.';
  return `On: ${parts.join(' and ')}; ${status.recoveryCodesLeft} recovery codes left.`;
}

function showRecoveryCodes(codes: readonly string[]): void {
  const list = byId<HTMLUListElement>('recovery-codes');
  list.replaceChildren(...codes.map((code) => Object.assign(document.createElement('li'), { textContent: code })));
  byId('recovery').hidden = false;
}

export async function showSecondFactor(say: Say, failure: (err: unknown) => string): Promise<void> {
  const section = byId('second-factor');
  const show = (status: Status): void => {
    byId('second-factor-status').textContent = statusText(status);
    byId('totp-start').hidden = status.totp;
    byId('factor-code-field').hidden = !status.totp && status.passkeys.length === 0;
    const list = byId<HTMLUListElement>('passkey-list');
    list.replaceChildren(...status.passkeys.map((p) => passkeyItem(p, reload, say, failure)));
  };
  const reload = async (): Promise<void> => show(await api<Status>('GET', '/api/v1/account/second-factor'));
  await reload();
  section.hidden = false;

  byId('totp-start').addEventListener('click', () => {
    void (async () => {
      try {
        const { secret, uri } = await api<{ secret: string; uri: string }>('POST', '/api/v1/account/second-factor/totp', proofFromFields());
        clearProofFields();
        byId<HTMLInputElement>('totp-secret').value = secret;
        byId<HTMLAnchorElement>('totp-uri').href = uri;
        byId('totp-setup').hidden = false;
        byId('totp-code').focus();
      } catch (err: unknown) {
        say(err instanceof MissingProof ? err.message : failure(err), 'error');
      }
    })();
  });

  const confirm = byId<HTMLFormElement>('totp-confirm-form');
  confirm.addEventListener('submit', (event) => {
    event.preventDefault();
    void (async () => {
      try {
        const { recoveryCodes, status } = await api<{ recoveryCodes: string[]; status: Status }>('POST', '/api/v1/account/second-factor/totp/confirm', { code: byId<HTMLInputElement>('totp-code').value.trim() });
        byId('totp-setup').hidden = true;
        confirm.reset();
        showRecoveryCodes(recoveryCodes);
        say('The authenticator app is on: from now on svc asks for its code after your password.', 'ok');
        show(status);
      } catch (err: unknown) {
        say(failure(err), 'error');
        byId('totp-code').focus();
      }
    })();
  });

  const passkeyForm = byId<HTMLFormElement>('passkey-form');
  passkeyForm.addEventListener('submit', (event) => {
    event.preventDefault();
    void (async () => {
      try {
        const options = await api<Record<string, unknown>>('POST', '/api/v1/account/second-factor/webauthn/register-options', proofFromFields());
        clearProofFields();
        const response = await passkeyRegistration(options);
        const name = byId<HTMLInputElement>('passkey-name').value.trim();
        const added = await api<{ recoveryCodes?: string[]; status: Status }>('POST', '/api/v1/account/second-factor/webauthn/register', { name, response });
        passkeyForm.reset();
        if (added.recoveryCodes !== undefined) showRecoveryCodes(added.recoveryCodes);
        say(`Passkey ${name} added.`, 'ok');
        show(added.status);
      } catch (err: unknown) {
        say(err instanceof MissingProof ? err.message : failure(err), 'error');
      }
    })();
  });
}

function passkeyItem(passkey: Status['passkeys'][number], reload: () => Promise<void>, say: Say, failure: (err: unknown) => string): HTMLLIElement {
  const item = document.createElement('li');
  item.append(passkey.name, ' ');
  const remove = document.createElement('button');
  remove.type = 'button';
  remove.className = 'danger';
  remove.textContent = 'Remove';
  remove.setAttribute('aria-label', `Remove passkey ${passkey.name}`);
  remove.addEventListener('click', () => {
    void (async () => {
      try {
        await api('DELETE', `/api/v1/account/second-factor/webauthn/${encodeURIComponent(passkey.id)}`, proofFromFields());
        // Removing a factor ends this account's sessions, this one included.
        location.assign('/login');
      } catch (err: unknown) {
        if (err instanceof MissingProof) return say(err.message, 'error');
        say(failure(err), 'error');
        await reload();
      }
    })();
  });
  item.append(remove);
  return item;
}
