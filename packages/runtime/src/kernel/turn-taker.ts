import type { StepTarget } from '../interpreter/step-types.js';
import type { CheckpointCache } from './checkpoint-cache.js';
import { queueOf } from './run-info.js';
import { newRunRecord, type NewRun } from './run-store.js';
import type { StepChain } from './step-chain.js';

/**
 * A chain that runs an agent's next turn itself, in the slot of the turn that ended: the turn's
 * run is made taken by `worker` (NewRun.takenBy: running, among the worker's taken tasks, so that
 * a survivor starts it should the worker die first), then handed to the chain.
 */
export interface TurnTaker {
  /** The worker whose chain runs the turn. */
  readonly worker: string;
  /**
   * Whether it runs a turn whose first step is `target` (its queue): true at most once, for the
   * caller that then makes the turn and {@link TurnTaker.take}s it. A chain runs one turn in the
   * slot that came free; others get tasks, and spread over the workers.
   */
  claim(target: StepTarget): boolean;
  /**
   * Whether it could run a turn whose first step is `target` (no turn claimed yet): a store that
   * makes several turns' runs in one transition makes one of them taken, and the caller claims it.
   */
  mayTake(target: StepTarget): boolean;
  /** Gives back a claim (the caller claims again what it turns out to run). */
  unclaim(): void;
  /** Run `turn`, made taken by {@link TurnTaker.worker}, next: its first step starts from `turn` as made. */
  take(turn: NewRun): void;
}

/** The {@link TurnTaker} of a step chain: one turn, on the chain's queue, run next in the chain. */
export class ChainTurnTaker implements TurnTaker {
  private claimed = false;
  /**
   * The cancels seen when this taker was made: before the transitions that make the turn runs
   * it takes are sent. A cancel seen since may be of the turn just made, its event come first.
   */
  private readonly cancelsSeen: number;

  constructor(
    readonly worker: string,
    private readonly chain: StepChain,
    /** The driver's remembered runs: the taken turn's first step starts from its record. */
    private readonly checkpoints: CheckpointCache,
  ) {
    this.cancelsSeen = checkpoints.cancelsSeen;
  }

  claim(target: StepTarget): boolean {
    if (this.claimed || queueOf(target) !== this.chain.queue) return false;
    this.claimed = true;
    return true;
  }

  mayTake(target: StepTarget): boolean {
    return !this.claimed && queueOf(target) === this.chain.queue;
  }

  unclaim(): void {
    this.claimed = false;
  }

  take(turn: NewRun): void {
    // Its first step needs no read of the run just made (as a step after this driver's commit),
    // unless a cancel came meanwhile: then it reads the run, and finds it cancelled if it was.
    this.checkpoints.remember(newRunRecord(turn), this.cancelsSeen);
    this.chain.children.push({ runId: turn.id, target: turn.target, priority: turn.priority });
  }
}
