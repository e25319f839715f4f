/**
 * Runs of every kind the studio shows, in a {@link FakeStudioEngine}: a run parked on a question,
 * a completed one, a failed one with stacks, a fan-out of `fanOut` children with failures and a
 * merge conflict, and `filler` more runs for paging.
 */
import type { FlowGraph, StepRecord } from '@queueflow/runtime';
import { FakeStudioEngine } from './fake-studio-engine.js';

const REVIEW_GRAPH: FlowGraph = {
  flow: 'review',
  root: 'Flow#0',
  nodes: [
    { id: 'Flow#0', kind: 'flow', start: 'load', successors: {} },
    { id: 'load', kind: 'node', successors: { default: 'enrich' } },
    { id: 'enrich', kind: 'node', successors: { default: 'approve' } },
    { id: 'approve', kind: 'node', successors: { yes: 'publish', no: 'enrich' } },
    { id: 'publish', kind: 'node', successors: {} },
  ],
  mermaid: [
    'flowchart TD',
    '  subgraph n0["review (flow)"]',
    '    n1["load"]',
    '    n2["enrich"]',
    '    n3["approve"]',
    '    n4["publish"]',
    '  end',
    '  start((start)) --> n1',
    '  n1 --> n2',
    '  n2 --> n3',
    '  n3 -->|"yes"| n4',
    '  n3 -->|"no"| n2',
  ].join('\n'),
  mermaidIds: { 'Flow#0': 'n0', load: 'n1', enrich: 'n2', approve: 'n3', publish: 'n4' },
};

const BATCH_GRAPH: FlowGraph = {
  flow: 'documents',
  root: 'documents',
  nodes: [
    { id: 'documents', kind: 'parallel-batch-flow', start: 'parse', successors: {} },
    { id: 'parse', kind: 'node', successors: { default: 'classify' } },
    { id: 'classify', kind: 'node', successors: {} },
  ],
  mermaid: [
    'flowchart TD',
    '  subgraph n0["documents (parallel-batch-flow)"]',
    '    n1["parse"]',
    '    n2["classify"]',
    '  end',
    '  start((start)) --> n1',
    '  n1 --> n2',
  ].join('\n'),
  mermaidIds: { documents: 'n0', parse: 'n1', classify: 'n2' },
};

function step(step: number, node: string, at: number, patch: StepRecord['patch'], extra: Partial<StepRecord> = {}) {
  return {
    step,
    node,
    tries: 1,
    startedAt: at,
    endedAt: at + 120 + step * 37,
    worker: 'host-a:4242:1',
    patch,
    ...extra,
  };
}

export interface DemoOptions {
  /** Children of the fan-out run. @defaultValue 2000 */
  fanOut?: number;
  /** Extra completed runs. @defaultValue 0 */
  filler?: number;
}

export function demoEngine(options: DemoOptions = {}): FakeStudioEngine {
  const engine = new FakeStudioEngine();
  const t0 = Date.now() - 3_600_000;
  engine.graphs.set('review', REVIEW_GRAPH);
  engine.graphs.set('documents', BATCH_GRAPH);

  for (let i = 0; i < (options.filler ?? 0); i++) {
    engine.add({
      id: `filler${String(i).padStart(6, '0')}`,
      flow: i % 3 ? 'review' : 'documents',
      createdAt: t0 - i * 1000,
      status: i % 17 ? 'completed' : 'failed',
    });
  }

  const reviewHistory = [
    step(0, 'load', t0 + 1000, [
      { op: 'add', path: '/draft', value: 'Queues are great' },
      { op: 'add', path: '/log', value: [] },
    ]),
    step(
      1,
      'enrich',
      t0 + 2000,
      [
        { op: 'replace', path: '/draft', value: 'Queues are great, and durable' },
        { op: 'add', path: '/log/-', value: 'enriched' },
        { op: 'add', path: '/tags', value: ['queues', 'redis'] },
      ],
      { tries: 2 },
    ),
  ];
  engine.add(
    {
      id: 'waitingReview1',
      flow: 'review',
      status: 'waiting',
      currentNode: 'approve',
      createdAt: t0 + 900_000,
      startedAt: t0 + 900_500,
    },
    reviewHistory,
    { title: 'A post' },
  );
  engine.add(
    {
      id: 'completedReview1',
      flow: 'review',
      status: 'completed',
      createdAt: t0 + 800_000,
      startedAt: t0 + 800_100,
      finishedAt: t0 + 860_000,
      lastAction: 'yes',
    },
    [
      ...reviewHistory,
      step(2, 'approve', t0 + 3000, [{ op: 'add', path: '/approved', value: true }], { action: 'yes' }),
      step(3, 'publish', t0 + 4000, [{ op: 'add', path: '/url', value: 'https://example.org/post' }]),
    ],
    { title: 'A post' },
  );
  const stack =
    'Error: model down\n    at Enrich.exec (flows/review.ts:42:11)\n    at StepDriver.run (kernel/step-driver.ts:120:5)';
  engine.add(
    {
      id: 'failedReview1',
      flow: 'review',
      status: 'failed',
      currentNode: 'enrich',
      createdAt: t0 + 700_000,
      finishedAt: t0 + 760_000,
      attempts: 3,
      error: { name: 'Error', message: 'model down', node: 'enrich', attempts: 3 },
      errors: [0, 1, 2].map((attempt) => ({
        name: 'Error',
        message: attempt < 2 ? `model busy (try ${attempt})` : 'model down',
        node: 'enrich',
        attempt,
        at: t0 + 700_000 + attempt * 1000,
        retryable: true,
        stack,
      })),
    },
    [reviewHistory[0]!],
    { title: 'Another post' },
  );

  const total = options.fanOut ?? 2000;
  const batch = engine.add(
    {
      id: 'fanOutDocs1',
      flow: 'documents',
      status: 'waiting',
      currentNode: 'documents',
      createdAt: t0 + 1_000_000,
      startedAt: t0 + 1_000_100,
      children: { total, ended: Math.floor(total * 0.6), failed: 7 },
      conflicts: [{ path: '/summary/last', children: [3, 17, 1999] }],
    },
    [step(0, 'documents', t0 + 1_000_200, [{ op: 'add', path: '/records', value: {} }])],
    { selection: { source: 'corpus', limit: total } },
  );
  const fan = engine.runs.get(batch.id)!;
  for (let index = 0; index < total; index++) {
    const ended = index < total * 0.6;
    const failed = ended && index % 83 === 5;
    fan.children.push({
      index,
      runId: `fanOutDocs1.1.${index}`,
      status: failed ? 'failed' : ended ? 'completed' : index < total * 0.65 ? 'running' : 'queued',
      ...(ended || index < total * 0.65 ? { startedAt: t0 + 1_000_300 + index * 10 } : {}),
      ...(ended ? { finishedAt: t0 + 1_000_300 + index * 10 + 50 + (index % 7) * 30 } : {}),
      ...(failed
        ? { error: { name: 'Error', message: `document ${index}: TOO_LARGE`, code: 'TOO_LARGE', node: 'parse' } }
        : {}),
    });
  }

  for (const child of fan.children.slice(0, 10)) {
    engine.add({
      id: child.runId!,
      flow: 'documents',
      parentId: batch.id,
      status: child.status,
      createdAt: t0 + 1_000_250,
      ...(child.error ? { error: child.error } : {}),
    });
  }

  engine.workerList = [
    {
      id: 'host-a:4242:1',
      host: 'host-a',
      pid: 4242,
      concurrency: 8,
      active: 3,
      flows: ['review', 'documents'],
      queues: ['default'],
      startedAt: t0,
      lastSeenAt: Date.now(),
    },
    {
      id: 'host-b:5151:1',
      host: 'host-b',
      pid: 5151,
      concurrency: 4,
      active: 0,
      flows: ['documents'],
      queues: ['default', 'llm'],
      startedAt: t0 + 5000,
      lastSeenAt: Date.now(),
    },
  ];
  engine.mailboxList = [
    {
      address: 'approvals',
      size: 1,
      messages: [
        {
          id: 'msg-1',
          body: { q: 'Publish "A post"?', draft: 'Queues are great, and durable' },
          replyTo: 'approvals.reply.waitingReview1',
          sentAt: t0 + 900_600,
        },
      ],
      parked: [],
    },
    {
      address: 'approvals.reply.waitingReview1',
      size: 0,
      messages: [],
      parked: [{ runId: 'waitingReview1', flow: 'review', node: 'approve', since: t0 + 900_600, deadline: null }],
    },
  ];
  return engine;
}
