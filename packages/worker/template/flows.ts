/**
 * The flows of this project: what `npm run dev` runs in this process, and what `npm run worker`
 * (`queueflow worker --flows flows.ts`) runs on Redis. A flow is a name and a function that
 * builds its graph (defineFlow); every process that runs it builds the same graph.
 */
import { defineFlow, Flow, Node } from '@queueflow/runtime';

/** The shared store: what the flow reads and writes. Plain JSON, so it can cross Redis. */
export interface HelloShared {
  name: string;
  greeting?: string;
  shout?: string;
}

/** prep reads `shared`, exec does the work (retried on failure), post writes `shared` and picks the next node. */
class Greet extends Node<HelloShared> {
  override prep(shared: HelloShared): string {
    return shared.name;
  }
  override exec(name: string): string {
    return `Hello, ${name}!`;
  }
  override post(shared: HelloShared, _name: string, greeting: string): string {
    shared.greeting = greeting;
    return 'greeted'; // the action: which successor runs next
  }
}

class Shout extends Node<HelloShared> {
  constructor() {
    // 3 tries of exec in all, 500 ms apart (`wait` would say the same in seconds, as in PocketFlow).
    super({ name: 'shout', maxRetries: 3, waitMs: 500 });
  }
  override prep(shared: HelloShared): string {
    return shared.greeting ?? '';
  }
  override exec(greeting: string): string {
    return greeting.toUpperCase();
  }
  override post(shared: HelloShared, _greeting: string, shout: string): void {
    shared.shout = shout;
  }
}

export const hello = defineFlow('hello', () => {
  const greet = new Greet({ name: 'greet' }); // stable names: the ids workers and runs agree on
  greet.on('greeted', new Shout());
  return new Flow(greet);
});
