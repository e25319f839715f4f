/**
 * A conversation's cost budget in the LocalEngine's store (the Redis store mirrors it in
 * conversations.lua, tested in tests/conformance/conversations.int.test.ts): spend past `max`
 * ends it, spend that sums to `max` by fractions does not, and the budget is the one given when
 * it began, whatever the caller does to its object afterwards.
 */
import { describe, expect, it } from 'vitest';
import { MemoryConversationStore } from '../src/local/memory-conversation-store.js';

const spent = (key: string, amount: number) => ({ ref: 'agent:a/1', key, amount, now: 1000 });

describe('conversation cost', () => {
  it('ends past max, not at a max reached by a sum of fractions', async () => {
    const store = new MemoryConversationStore();
    await store.begin('c1', { cost: { key: 'usd', max: 0.3 } }, 1000);
    expect(await store.spend('c1', spent('usd', 0.1))).toEqual({ ok: true });
    expect(await store.spend('c1', spent('usd', 0.2))).toEqual({ ok: true }); // 0.30000000000000004
    expect(await store.spend('c1', spent('tokens', 1e6))).toEqual({ ok: true }); // another key
    expect(await store.spend('c1', spent('usd', 0.01))).toMatchObject({
      ok: false,
      error: {
        code: 'CONVERSATION_BUDGET',
        message: "conversation 'c1' reached its budget (cost: 0.3 usd): no further turn runs",
      },
    });
    expect((await store.load('c1'))!.spend).toEqual({ 'agent:a/1': { usd: 0.1 + 0.2 + 0.01, tokens: 1e6 } });
  });

  it('keeps the budget it began with', async () => {
    const store = new MemoryConversationStore();
    const budget = { cost: { key: 'tokens', max: 100 } };
    await store.begin('c2', budget, 1000);
    budget.cost.max = -5;
    expect((await store.load('c2'))!.budget).toEqual({ cost: { key: 'tokens', max: 100 } });
  });
});
