/** The Entra tenant of the stand-in (test/helpers/fake-entra.ts), its users and groups, and connector configs pointing at it. */
import type { FakeEntra, FakeEntraGroup, FakeEntraOptions, FakeEntraUser } from '../../helpers/fake-entra.js';

export const TENANT_ID = '5b3c2a10-8f1e-4d7c-9a6b-0c1d2e3f4a5b';
export const OTHER_TENANT_ID = 'aa0e9d8c-7b6a-4594-8372-6150e4d3c2b1';
export const DOMAIN = 'contoso.example';
export const CLIENT_ID = '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
export const CLIENT_SECRET = 'entra-secret~Q8z.4kLmN0pR_7sT';
export const SECRETS = { 'entra.clientSecret': CLIENT_SECRET };
export const CALLBACK = 'https://svc.example.org/api/idp/callback';

const gid = (n: number): string => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

export const OPS: FakeEntraGroup = { id: gid(1), displayName: 'ops', securityEnabled: true };
export const DEV: FakeEntraGroup = { id: gid(2), displayName: 'dev', securityEnabled: true };
/** A Microsoft 365 group: not a security group. */
export const COFFEE: FakeEntraGroup = { id: gid(3), displayName: 'coffee lovers', securityEnabled: false };
export const OTHER: FakeEntraGroup = { id: gid(4), displayName: 'elsewhere', securityEnabled: true };
/** 246 more, every fifth one a Microsoft 365 group: with OPS, DEV, COFFEE and OTHER, the 250 of the overage user. */
export const MANY: readonly FakeEntraGroup[] = Array.from({ length: 246 }, (_, i) => ({ id: gid(100 + i), displayName: `team-${100 + i}`, securityEnabled: i % 5 !== 0 }));

export const ALICE: FakeEntraUser = { oid: '11111111-1111-4111-8111-111111111111', name: 'Alice Liddell', upn: 'alice@contoso.example', email: 'alice@contoso.example', groups: [OPS.id, DEV.id, COFFEE.id] };
export const BOB: FakeEntraUser = { oid: '22222222-2222-4222-8222-222222222222', name: 'Bob', upn: 'bob@contoso.example', groups: [OTHER.id] };
export const MANYGROUPS: FakeEntraUser = { oid: '33333333-3333-4333-8333-333333333333', name: 'Many Groups', upn: 'many@contoso.example', groups: [OPS.id, DEV.id, COFFEE.id, OTHER.id, ...MANY.map((g) => g.id)] };
/** A user of another tenant (for organizations and common). */
export const GUEST: FakeEntraUser = { oid: '44444444-4444-4444-8444-444444444444', name: 'Guest', upn: 'guest@fabrikam.example', groups: [], tid: OTHER_TENANT_ID };

/** A security group another tenant's admin made, named as ours is, and that tenant's user in it (review of issue 54, finding 3). */
export const FOREIGN_OPS: FakeEntraGroup = { id: '99999999-0000-4000-8000-000000000009', displayName: 'ops', securityEnabled: true };
export const MALLORY: FakeEntraUser = { oid: '55555555-5555-4555-8555-555555555555', name: 'Mallory', upn: 'mallory@evil.example', groups: [FOREIGN_OPS.id], tid: OTHER_TENANT_ID };

export function entraOptions(redirectUri: string, extra: Partial<FakeEntraOptions> = {}): FakeEntraOptions {
  return {
    tenantId: TENANT_ID, domain: DOMAIN, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUri,
    users: [ALICE, BOB, MANYGROUPS, GUEST, MALLORY], groups: [OPS, DEV, COFFEE, OTHER, ...MANY, FOREIGN_OPS], groupMembershipClaims: 'All', ...extra,
  };
}

/** The stand-in as both the authority and Graph. */
export function microsoftConfig(fake: Pick<FakeEntra, 'url' | 'caPem'>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { tenant: TENANT_ID, clientID: CLIENT_ID, clientSecret: '$entra.clientSecret', authority: fake.url, graphURL: fake.url, rootCA: fake.caPem, ...extra };
}
