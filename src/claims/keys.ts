/**
 * The claim rules' key names, which `oidc.config` and every connector's `config` take
 * (./rules-config.ts). Apart, with no imports, so that the configuration's "did you mean"
 * (src/config/key-hints.ts) can name them without a cycle.
 */
export const CLAIM_RULE_KEYS = ['claimValidationRules', 'claimMappings', 'userValidationRules'] as const;
