/** A flow for the schedule tests on worker processes: one quick node. */
import { defineFlow, Flow, Node } from '@queueflow/runtime';

class Tick extends Node<{ ticks?: number }> {
  override post(shared: { ticks?: number }): void {
    shared.ticks = (shared.ticks ?? 0) + 1;
  }
}

export const ticked = defineFlow('ticked', () => new Flow(new Tick({ name: 'tick' })));
