// Types of scripts/ensure-built.mjs for the tests that import its decision.
export declare const SOURCES: readonly string[];
export declare const ENTRY: string;
export declare const TSC: string;
export declare const INCREMENTAL: readonly string[];
export interface BuildInputs {
  readonly entryExists: boolean;
  readonly newestSource: number;
  readonly builtAt: number;
  readonly hasTypescript: boolean;
}
export type BuildDecision = { readonly action: 'run' } | { readonly action: 'build' | 'refuse'; readonly why: string };
export declare function decide(inputs: BuildInputs): BuildDecision;
