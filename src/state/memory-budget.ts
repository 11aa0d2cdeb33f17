/**
 * The memory backend's byte budgets (StateBackend.charge/release): per budget, the charge of
 * each member, the bytes each source holds and the total, kept exact on every charge and
 * release. Expired charges are given back by a scan of the budget's members, run when a charge
 * would be refused or at most once per PRUNE_EVERY_MS: a scan on every charge would cost a
 * flood's every request the whole ledger, and a charge refused because of an expired one is
 * only ever refused less than a second too early, on the safe side.
 */
import { checkCharge, type BudgetAnswer, type BudgetCharge, type BudgetLimits } from './state.js';

export const PRUNE_EVERY_MS = 1_000;

interface Held {
  readonly source: string;
  bytes: number;
  untilMs: number;
}

interface Budget {
  readonly members: Map<string, Held>;
  readonly sources: Map<string, number>;
  total: number;
  prunedAt: number;
}

export interface MemoryBudgets {
  charge(budget: string, charge: BudgetCharge, limits: BudgetLimits, nowMs: number): BudgetAnswer;
  release(budget: string, member: string): void;
  clear(): void;
}

export function createMemoryBudgets(): MemoryBudgets {
  const budgets = new Map<string, Budget>();

  function add(b: Budget, source: string, bytes: number): void {
    const held = (b.sources.get(source) ?? 0) + bytes;
    if (held <= 0) b.sources.delete(source);
    else b.sources.set(source, held);
    b.total += bytes;
  }

  function drop(b: Budget, member: string): void {
    const held = b.members.get(member);
    if (held === undefined) return;
    b.members.delete(member);
    add(b, held.source, -held.bytes);
  }

  function prune(b: Budget, nowMs: number): void {
    b.prunedAt = nowMs;
    for (const [member, held] of b.members) if (held.untilMs <= nowMs) drop(b, member);
  }

  function refusal(b: Budget, charge: BudgetCharge, limits: BudgetLimits): BudgetAnswer | undefined {
    const ofSource = b.sources.get(charge.source) ?? 0;
    if (ofSource + charge.bytes > limits.perSourceBytes) return { admitted: false, bound: 'source', heldBytes: ofSource };
    if (b.total + charge.bytes > limits.totalBytes) return { admitted: false, bound: 'total', heldBytes: b.total };
    return undefined;
  }

  return {
    charge(name, charge, limits, nowMs) {
      checkCharge(name, charge, limits);
      let b = budgets.get(name);
      if (b === undefined) budgets.set(name, (b = { members: new Map(), sources: new Map(), total: 0, prunedAt: nowMs }));
      if (nowMs - b.prunedAt >= PRUNE_EVERY_MS) prune(b, nowMs);
      const held = b.members.get(charge.member);
      if (held !== undefined && held.untilMs > nowMs) {
        add(b, held.source, charge.bytes - held.bytes);
        held.bytes = charge.bytes;
        held.untilMs = charge.untilMs;
        return { admitted: true, as: 'renewed' };
      }
      drop(b, charge.member);
      let refused = refusal(b, charge, limits);
      if (refused !== undefined && b.prunedAt !== nowMs) {
        prune(b, nowMs);
        refused = refusal(b, charge, limits);
      }
      if (refused !== undefined) return refused;
      b.members.set(charge.member, { source: charge.source, bytes: charge.bytes, untilMs: charge.untilMs });
      add(b, charge.source, charge.bytes);
      return { admitted: true, as: 'new' };
    },

    release(name, member) {
      const b = budgets.get(name);
      if (b !== undefined) drop(b, member);
    },

    clear: () => budgets.clear(),
  };
}
