/** The cluster primary's restart budget: per worker slot, over a sliding minute. */
import { expect } from 'chai';
import { createRestartBudgets, MAX_RESTARTS, RESTART_WINDOW_MS } from '../../src/commands/restart-budget.js';

describe('restart budgets', () => {
  it('doubles the delay from 0.1 s for each death of a slot, and refuses the 6th within the window', () => {
    const budgets = createRestartBudgets();
    const delays = Array.from({ length: MAX_RESTARTS + 1 }, (_, i) => budgets.next(0, 1_000 + i));
    expect(delays).to.deep.equal([100, 200, 400, 800, 1_600, undefined]);
  });

  it('gives another slot its own budget while one slot has used up its own', () => {
    const budgets = createRestartBudgets();
    for (let i = 0; i < MAX_RESTARTS; i++) budgets.next(0, i);
    expect(budgets.next(1, 10), 'first death of slot 1').to.equal(100);
    expect(budgets.next(0, 11), 'sixth death of slot 0').to.equal(undefined);
    expect(budgets.next(1, 12), 'second death of slot 1').to.equal(200);
  });

  it('forgets deaths older than the window', () => {
    const budgets = createRestartBudgets();
    for (let i = 0; i < MAX_RESTARTS; i++) budgets.next(0, i);
    expect(budgets.next(0, RESTART_WINDOW_MS), 'the first death left the window').to.equal(1_600);
    const steady = createRestartBudgets();
    // One death every 13 s: four before each in the minute, so the delay stays at 1.6 s and is never refused.
    const delays = Array.from({ length: 8 }, (_, i) => steady.next(0, i * 13_000));
    expect(delays).to.deep.equal([100, 200, 400, 800, 1_600, 1_600, 1_600, 1_600]);
  });
});
