/**
 * What the studio needs of an engine: the `Engine` methods it calls. `RedisEngine` and
 * `LocalEngine` both have them, and so does a fake in the studio's unit tests.
 */
import type { Engine } from '@queueflow/runtime';

export type { ChildSummary, RunChange, RunInfo, RunStatus, RunSummary } from '@queueflow/runtime';
/** One RFC 6902 JSON Patch operation (as `StepRecord.patch` and `ForkOptions.patch` hold them). */
export type { Operation as PatchOperation } from 'fast-json-patch';

/**
 * The engine methods the studio calls. The studio never closes the engine: whoever made it does.
 */
export type StudioEngine = Pick<
  Engine,
  | 'get'
  | 'list'
  | 'cancel'
  | 'history'
  | 'retry'
  | 'fork'
  | 'workers'
  | 'mailboxes'
  | 'answer'
  | 'watch'
  | 'sharedAt'
  | 'children'
  | 'graph'
>;
