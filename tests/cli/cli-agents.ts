/**
 * The agent types of the CLI's agent tests, a flows module a worker process loads (`--flows`): a
 * `pinger` that answers `ping` to `pong` and back, `rounds` times, then stops; each turn spends 5 tokens.
 */
import { defineAgent, Node } from '@queueflow/runtime';

class Ping extends Node<{ rounds: number }> {
  override async prep(state: { rounds: number }): Promise<void> {
    state.rounds += 1;
    const { left } = this.message!.body as { left: number };
    if (left <= 0) return;
    const other = this.agentKey === 'ping' ? 'pong' : 'ping';
    await this.send(pinger.ref(other), { left: left - 1 });
  }
  override async exec(): Promise<void> {
    await this.spend('tokens', 5);
  }
}
export const pinger = defineAgent('cli-pinger', {
  state: () => ({ rounds: 0 }),
  turn: () => new Ping({ name: 'ping' }),
});
