import type { StepEmitterPort } from '../interpreter/step-types.js';

const EMITTER = Symbol.for('queueflow.emitter');

/** What a per-visit copy emits through: its step's stream, and the id of the node it visits. */
export interface AttachedEmitter {
  readonly port: StepEmitterPort;
  readonly node: string;
}

/** Gives a per-visit copy the stream of the step running it (engines do this, as with the mailbox). */
export function attachEmitter(node: object, emitter: AttachedEmitter): void {
  (node as Record<symbol, AttachedEmitter>)[EMITTER] = emitter;
}

/** The step stream attached to `node`, if an engine runs it. */
export function emitterOf(node: object): AttachedEmitter | undefined {
  return (node as Record<symbol, AttachedEmitter | undefined>)[EMITTER];
}
