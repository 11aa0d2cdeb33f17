/** The Google accounts and groups of the stand-in, and connector configs pointing at it, shared by the Google tests. */
import type { FakeGoogle, FakeGoogleOptions, FakeGoogleUser } from '../../helpers/fake-google.js';

export const CLIENT_ID = '123456789012-svc.apps.googleusercontent.com';
export const CLIENT_SECRET = 'GOCSPX-google-client-secret-0a1b2c';
export const CALLBACK = 'https://svc.example.org/api/idp/callback';
export const ADMIN = 'admin@acme.example';

/**
 * A consumer account (no hd) whose email claim is alice's address, which Google has not
 * verified; signed in by its sub (its email finds alice). Review of issue 54, finding 5.
 */
export const IMPOSTOR: FakeGoogleUser = { sub: '100000000000000000666', email: 'alice@acme.example', name: 'Not Alice', emailVerified: false };

export const USERS: readonly FakeGoogleUser[] = [
  { sub: '100000000000000000001', email: 'alice@acme.example', name: 'Alice Liddell', hd: 'acme.example' },
  { sub: '100000000000000000002', email: 'bob@acme.example', name: 'Bob Builder', hd: 'acme.example' },
  { sub: '100000000000000000003', email: 'carol@other.example', name: 'Carol Other', hd: 'other.example' },
  { sub: '100000000000000000004', email: 'dave@gmail.com', name: 'Dave Consumer' },
  { sub: '100000000000000000005', email: 'erin@acme.example', name: 'Erin Many', hd: 'acme.example' },
  { sub: '100000000000000000009', email: ADMIN, name: 'Workspace Admin', hd: 'acme.example' },
  IMPOSTOR,
];

/**
 * Alice is directly in ops and dev; ops is in eng, eng in all, and all in ops again (a cycle).
 * Bob is in sales only; Erin in five groups (three pages at two a page).
 */
export const GROUPS: FakeGoogleOptions['groups'] = {
  'ops@acme.example': ['alice@acme.example', 'all@acme.example', 'erin@acme.example'],
  'dev@acme.example': ['alice@acme.example', 'erin@acme.example'],
  'eng@acme.example': ['ops@acme.example'],
  'all@acme.example': ['eng@acme.example'],
  'sales@acme.example': ['bob@acme.example', 'erin@acme.example'],
  'g4@acme.example': ['erin@acme.example'],
  'g5@acme.example': ['erin@acme.example'],
};

export const ALICE_GROUPS = ['ops@acme.example', 'dev@acme.example'];
export const ALICE_TRANSITIVE = ['ops@acme.example', 'dev@acme.example', 'eng@acme.example', 'all@acme.example'];
export const ERIN_GROUPS = ['ops@acme.example', 'dev@acme.example', 'sales@acme.example', 'g4@acme.example', 'g5@acme.example'];

export function fakeOptions(pageSize = 2): FakeGoogleOptions {
  return { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUri: CALLBACK, users: USERS, groups: GROUPS, admins: [ADMIN], pageSize };
}

export function secrets(fake: Pick<FakeGoogle, 'keyFile'>): Record<string, string> {
  return { 'google.clientSecret': CLIENT_SECRET, 'google.serviceAccountKey': fake.keyFile };
}

/** Users of acme.example, groups through the service account acting as its admin. */
export function googleConfig(fake: Pick<FakeGoogle, 'url' | 'caPem'>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    issuer: fake.url, directoryURL: fake.url, rootCA: fake.caPem,
    clientID: CLIENT_ID, clientSecret: '$google.clientSecret',
    hostedDomains: ['acme.example'],
    serviceAccountKey: '$google.serviceAccountKey', domainToAdminEmail: { 'acme.example': ADMIN },
    ...extra,
  };
}
