import { hostname } from 'node:os';
import { DelayedError, Worker, type Job } from 'bullmq';
import { nanoid } from 'nanoid';
import { DEFAULT_QUEUE, type Clock, type FlowsOption } from '@queueflow/runtime';
import {
  FlowRegistry,
  StepDriver,
  checkQueueName,
  invalidOption,
  inboxDepths,
  observeGauges,
  resumeCascades,
  runScheduleTick,
  systemClock,
  AgentRuntime,
  ReminderTimer,
  agentsOf,
  withTurnFlows,
  type AgentDefinition,
  type Task,
  type TaskDelivery,
} from '@queueflow/runtime/kernel';
import { BullmqScheduler, taskOfJob } from './bullmq-scheduler.js';
import { closeBullmqWorker } from './close-bullmq-worker.js';
import { createRedis, serverOf, type ConnectionOption } from './connection.js';
import { RedisAgentStore } from './redis-agent-store.js';
import { RedisConversationStore } from './redis-conversation-store.js';
import { RedisSharedMemoryStore } from './redis-shared-memory-store.js';
import { checkRedisConfig } from './probe-server.js';
import { RedisLiveness } from './redis-liveness.js';
import { normalizePrefix } from './redis-keys.js';
import { checkPartitions, partitionsOf } from './partitions.js';
import { ParkRecheck } from './park-recheck.js';
import { SharedSlots } from './shared-slots.js';
import { RetryStep, stepBackoff } from './retry-step.js';
import { RedisRunEvents } from './redis-run-events.js';
import { RedisRunStore } from './redis-run-store.js';
import { RedisSchedules, TICK_JOB, tickOfJob } from './redis-schedules.js';
import { withScripts } from './scripts.js';
import { ServerClock } from './server-clock.js';
import { storeOptions, type StoreSettings } from './store-settings.js';
import { waitForRedis } from './wait-for-redis.js';
import { DEFAULT_MAX_LOOP_LAG_MS, WORKER_LAPSE_MS, WorkerHeartbeat } from './worker-heartbeat.js';
import { holderOf } from './worker-registry.js';
import { LostJobs, giveUpJob, lostStep } from './lost-jobs.js';

/** How long a step or tick this worker cannot run (other code, no such flow) waits before another try, in ms. */
const REFUSAL_DELAY_MS = 5000;

/** Steps a job may run of its run after its own (WorkerOptions.continueSteps). */
const DEFAULT_CONTINUE_STEPS = 50;

export interface WorkerOptions extends StoreSettings {
  /** Redis to use: a URL or ioredis options. @defaultValue `REDIS_URL`, else `redis://127.0.0.1:6379` */
  connection?: ConnectionOption;
  /** The flows this worker can run: definitions from `defineFlow`, or a module exporting them (and agents). */
  flows: FlowsOption;
  /**
   * The agent types whose turns this worker runs (`defineAgent`), beside those a module given as
   * `flows` exports. Its heartbeat also starts the turns of keys of these types whose sender died
   * before starting them.
   */
  agents?: readonly AgentDefinition<any>[];
  /**
   * Key prefix shared with the clients. Its hash tag (the text between the first `{` and the
   * first `}` after it) keeps every key in one Redis Cluster slot; a prefix without `{` gets
   * braces around it, so `b6acme` and `{b6acme}` name the same keys. @defaultValue `{qf}`
   * @throws TypeError (from `startWorker`) for a prefix with spaces or `:`, a `{` with no `}`
   *   after it (`a{b`), or an empty hash tag (`{}`, `x{}`).
   */
  prefix?: string;
  /**
   * Partitions of the deployment's store (README "Scaling out"): each has a hash tag, and so a
   * Redis Cluster slot, of its own, and its own BullMQ queues. Stored once, in partition 0's
   * settings (`<prefix>:settings`), by the first worker to start or client to write: unset,
   * the stored count is used; set, it must equal the stored one.
   * @defaultValue the stored count, else 16 on a Redis Cluster and 1 on one server
   * @throws TypeError (from `startWorker`) for a count that is not an integer from 1 to 1024;
   *   QueueflowError `INVALID_OPTION` for one that differs from the stored count.
   */
  partitions?: number;
  /**
   * The partitions whose queues this worker serves (0-based). A deployment that grows past one
   * machine's Redis may give groups of workers groups of partitions; schedules' ticks are taken
   * by workers serving partition 0.
   * @defaultValue every partition
   * @throws TypeError (from `startWorker`) for an empty list or an entry that is not a partition
   *   of the deployment.
   */
  servePartitions?: number[];
  /**
   * Steps run at once by this worker, on each queue it serves (whichever partitions they come
   * from). @defaultValue 8
   */
  concurrency?: number;
  /**
   * The queues this worker serves: it runs the steps (and fan-out items) of nodes whose `queue`
   * is one of these, and no others. A deployment where a model client and its API key live on
   * some machines only starts those workers with `['llm']` (or `['default', 'llm']`) and gives
   * the nodes that call the model `queue: 'llm'`. Schedules' ticks are taken by workers serving
   * the default queue.
   * @defaultValue `['default']`
   * @throws TypeError (from `startWorker`) for an empty list or a name that is not 1 to 64
   *   letters, digits, `_`, `-` or `.` starting with a letter or digit.
   */
  queues?: string[];
  /**
   * Steps this worker may run straight after the step a job brought, in the same job: the run's
   * next steps on the same queue, and the steps of parked runs those steps wake (a message for
   * them: the worker takes the woken run instead of making its wake due). A run's steps and an
   * agent's answers then cost no BullMQ job each (add, fetch, finish), only their commits. A chain
   * also ends after one second, so that waiting tasks (of a higher priority, say) get the slot.
   * Should the worker die mid-chain, the job is taken over as any step is, and a survivor makes
   * the runs it had taken due; each goes on from its last commit. `0`: every step and every wake
   * is a job of its own. @defaultValue 50
   * @throws TypeError (from `startWorker`) for a value that is not an integer from 0 and up.
   */
  continueSteps?: number;
  /**
   * How long a step's lock lasts without renewal, in ms; a worker that dies loses its steps to
   * others after about this long (BullMQ `lockDuration`). @defaultValue 30000
   */
  lockDurationMs?: number;
  /**
   * How often this worker looks for stalled steps, in ms (BullMQ `stalledInterval`): a dead
   * worker's step is taken over between `lockDurationMs` and `lockDurationMs + stalledIntervalMs`
   * after its last lock renewal. @defaultValue half of `lockDurationMs` (15000 by default)
   */
  stalledIntervalMs?: number;
  /**
   * Times a step may stall (its worker died) before it fails for good (BullMQ
   * `maxStalledCount`). @defaultValue 2
   */
  maxStalledCount?: number;
  /**
   * Longest a run parked on an empty mailbox sleeps before it looks again, in ms (a safety net
   * for a wake-up lost in a crash; a send wakes it at once). @defaultValue 60000
   */
  parkRecheckMs?: number;
  /**
   * How long Redis may leave the worker's PING (sent every second) unanswered before the worker
   * says, once, through `onError` (QueueflowError `REDIS_TIMEOUT`), that Redis does not answer, in
   * ms; it says so again through `onLog` when Redis answers. The worker itself never gives up: it
   * waits for Redis (BullMQ's behaviour). @defaultValue 5000
   */
  pingTimeoutMs?: number;
  /**
   * How long this worker's main event loop may go without a turn (a long synchronous `exec`, a
   * GC pause, CPU starvation) and its heartbeat go on, in ms. Heartbeats come from a thread of
   * their own, so a busy worker is not taken for dead; past this lag it is, and its steps are
   * taken over (README "Workers: busy is not dead"). @defaultValue 60000
   */
  maxLoopLagMs?: number;
  /**
   * Fail at once, as `startWorker` did before, when Redis cannot be reached as the worker starts
   * (`queueflow worker --exit-on-unreachable`). Unset, the worker waits for Redis as long as it
   * takes, trying again after 0.5 s, 1 s, 2 s... at most 10 s apart and logging one line (`onLog`)
   * per wait; a refusal waiting cannot mend (a wrong password, an unknown database) still fails
   * at once. @defaultValue false
   */
  exitOnUnreachable?: boolean;
  /** Called with errors outside any run (connection errors, a failed recovery, Redis not answering). @defaultValue log to stderr */
  onError?: (error: Error) => void;
  /** Lines worth a log: a dead worker's steps taken over, Redis answering again, each wait for Redis at start. @defaultValue stdout, prefixed with the pid */
  onLog?: (line: string) => void;
  /**
   * This machine's clock. Deadlines and timestamps are taken on the Redis server's clock through
   * it (its offset to `TIME` is measured at start and at every heartbeat); tests inject a skewed
   * one. @defaultValue the system clock
   */
  clock?: Clock;
}

/** A running worker. */
export interface QueueflowWorker {
  /**
   * Stops taking steps, waits for the steps in flight to finish and commit, then closes the
   * connections. Nothing is left active (BullMQ `worker.close()`).
   */
  close(): Promise<void>;
  /** The deployment's partition count, and the partitions this worker serves (0-based). */
  readonly partitions: { count: number; served: readonly number[] };
}

/**
 * Starts a worker that takes steps of the given flows from Redis. Workers are stateless: start
 * as many as you like, anywhere; any of them may die at any moment. It warns `QF_REDIS_CONFIG`
 * when Redis may evict keys, or when its Redis user may not read `maxmemory-policy` (INFO is
 * forbidden to a least-privilege user: README "Production Redis"), and goes on.
 *
 * Started while Redis cannot be reached, it waits for Redis (see `exitOnUnreachable`) and
 * resolves once Redis is up and the worker takes steps.
 *
 * @throws TypeError for invalid options; QueueflowError `REDIS_UNAVAILABLE` (naming the server and
 *   the reason) when Redis refuses the worker's password or user, or, with `exitOnUnreachable`,
 *   cannot be reached, with every connection it opened closed again.
 * @example
 * ```ts
 * const worker = await startWorker({ connection: 'redis://127.0.0.1:6379', flows: [review], concurrency: 4 });
 * process.on('SIGTERM', () => worker.close());
 * ```
 */
export async function startWorker(options: WorkerOptions): Promise<QueueflowWorker> {
  const agentTypes = agentsOf(options.flows, options.agents);
  const registry = new FlowRegistry(withTurnFlows(options.flows, agentTypes));
  const prefix = normalizePrefix(options.prefix);
  const configuredPartitions = checkPartitions('startWorker', options.partitions);
  const settings = storeOptions(options, 'startWorker');
  const concurrency = positiveInteger('concurrency', options.concurrency, 8);
  const lockDuration = positiveInteger('lockDurationMs', options.lockDurationMs, 30_000);
  const stalledInterval = positiveInteger(
    'stalledIntervalMs',
    options.stalledIntervalMs,
    Math.max(1, Math.round(lockDuration / 2)),
  );
  const maxStalledCount = positiveInteger('maxStalledCount', options.maxStalledCount, 2);
  const queues = queuesOption(options.queues);
  const pingTimeoutMs = positiveInteger('pingTimeoutMs', options.pingTimeoutMs, 5000);
  const onError = options.onError ?? ((error: Error) => console.error(`queueflow worker: ${error.message}`));
  for (const name of registry.names()) registry.graph(name); // build every graph once, now: fail early

  const log = options.onLog ?? ((line: string) => console.log(`queueflow worker ${process.pid}: ${line}`));
  const exitOnUnreachable = options.exitOnUnreachable ?? false;
  const { server, redis, subscriber } = await waitForRedis(options.connection, { exitOnUnreachable, log, onError });
  checkRedisConfig(server);
  const skipVersionCheck = !server.info;
  const { partitions, served } = await (async () => {
    const stored = await partitionsOf(redis, prefix, configuredPartitions, 'startWorker');
    return { partitions: stored, served: servedPartitions(options.servePartitions, stored.count) };
  })().catch(async (error: unknown) => {
    await Promise.all([redis.quit().catch(() => {}), subscriber.quit().catch(() => {})]);
    throw error;
  });
  const keys = partitions.home;
  const newWorkerId = (): string => `${hostname()}:${process.pid}:${nanoid(6)}`;
  const workerId = newWorkerId();
  const clock = new ServerClock(redis, options.clock ?? systemClock);
  await clock.sync();
  const scheduler = new BullmqScheduler(redis, partitions, onError, { skipVersionCheck });
  const store = new RedisRunStore(withScripts(redis), partitions, settings, clock);
  const agentStore = new RedisAgentStore(
    withScripts(redis),
    partitions,
    () => createRedis(options.connection, 'reader', onError),
    settings.retentionSeconds,
  );
  const conversations = new RedisConversationStore(withScripts(redis), partitions, settings.retentionSeconds);
  const agents = new AgentRuntime(agentTypes, agentStore, store, scheduler, registry, {
    conversations,
    clock,
    maxCheckpointBytes: settings.maxCheckpointBytes,
    largeValueBytes: settings.largeValueBytes,
    checkpointOf: (run) => driver.checkpointOf(run),
  });
  const driver: StepDriver = new StepDriver(store, scheduler, registry, {
    ...(agentTypes.length === 0 ? {} : { agents }),
    memories: new RedisSharedMemoryStore(withScripts(redis), partitions),
    conversations,
    clock,
    maxCheckpointBytes: settings.maxCheckpointBytes,
    largeValueBytes: settings.largeValueBytes,
    refusalDelayMs: REFUSAL_DELAY_MS,
    parkRecheckMs: positiveInteger('parkRecheckMs', options.parkRecheckMs, 60_000),
    workerId,
    continueSteps: nonNegativeInteger('continueSteps', options.continueSteps, DEFAULT_CONTINUE_STEPS),
    // A concurrency lease of a node's `limits` is given back by the worker that claims this one
    // once it is known dead (WorkerHeartbeat), or by this one when it is fenced; its expiry, renewed
    // at each beat, is the last safety net (never a slot lost for good).
    budgetLeaseMs: BUDGET_LEASE_MS,
    onBudgetLeases: () => leasesTaken(),
  });
  /** Set once the heartbeat exists (a step may take leases before). */
  let leasesTaken = (): void => {};

  // Cancel requests abort the `exec` of a step running here; those lost while the subscription
  // was down are found by reading the runs of the steps running here.
  await new RedisRunEvents(subscriber, keys.events()).subscribe({
    cancelled: (runId, retries) => driver.abort(runId, retries),
    resync: () => void driver.abortCancelled().catch(onError),
  });

  /** Runs a job's task; a retry or a deferral goes back to BullMQ's delayed set, holding no slot. */
  let active = 0;
  const schedules = new RedisSchedules(redis, keys, scheduler);
  const tickHost = {
    registry,
    store,
    scheduler,
    log: schedules,
    clock,
    maxCheckpointBytes: settings.maxCheckpointBytes,
  };
  /** The jobs running here, by id: a fenced worker gives every one of them up. */
  const runningJobs = new Set<string>();
  const processJob = async (job: Job, token?: string, signal?: AbortSignal): Promise<void> => {
    active++;
    if (job.id !== undefined) {
      runningJobs.add(job.id);
      jobRunning(job.id, true);
    }
    try {
      if (job.name === TICK_JOB) {
        const { schedule, at } = tickOfJob(job);
        if (!registry.names().includes(schedule.flow)) {
          // Not a failure: a worker with the flow takes the tick (a try is not used up).
          await job.moveToDelayed(Date.now() + REFUSAL_DELAY_MS, token);
          throw new DelayedError(`schedule '${schedule.name}': this worker has no flow '${schedule.flow}'`);
        }
        await runScheduleTick(schedule, at, tickHost);
        return;
      }
      const task = taskOfJob(job);
      const result = await driver
        .run(task, job.attemptsMade, signal, await deliveryOf(job, task))
        .catch((error: unknown) => {
          if (signal?.aborted) return undefined;
          throw error;
        });
      // Its lock was lost (another worker runs the step now) or this worker was fenced: the
      // step's try was dropped, uncommitted, and the job is not this worker's to finish.
      if (signal?.aborted || result === undefined) return await giveUpJob(job, token, `job ${job.id} was given up`);
      if (result.type === 'retry') throw new RetryStep(result.error, result.delayMs);
      if (result.type === 'defer') {
        await job.moveToDelayed(Date.now() + result.delayMs, token);
        if (result.woken && job.id !== undefined) {
          const jobId = job.id;
          // A wait for a budget: at its due time the task goes to the front of the queue (BullMQ
          // would put it at the back, behind every step queued meanwhile, while its budget's room
          // stands idle). Should this worker die, BullMQ's delay still brings it back.
          setTimeout(() => void scheduler.hurry(jobId).catch(onError), result.delayMs).unref();
          // A wake (promote) that came while the job was active missed it: make it due now.
          if (await result.woken()) await scheduler.hurry(jobId);
        }
        throw new DelayedError(result.reason);
      }
    } finally {
      active--;
      if (job.id !== undefined) {
        runningJobs.delete(job.id);
        jobRunning(job.id, false);
      }
    }
  };
  /** Tells the heartbeat a job started or ended (set once the heartbeat exists). */
  let jobRunning = (_id: string, _running: boolean): void => {};
  /**
   * How BullMQ handed `job` out, when not for the first time (StepDriver.run): a job that came back
   * from its stalled-job check (its lock expired) was taken over from the worker whose last beat
   * named it, if that one is still registered (a dead worker is, until a survivor claims it). Only
   * such a job reads the registry; a job handed out the first time costs nothing.
   */
  const deliveryOf = async (job: Job, task: Task): Promise<TaskDelivery | undefined> => {
    if (job.attemptsStarted <= 1) return undefined;
    if (job.stalledCounter === 0 || task.type === 'item' || job.id === undefined) return { again: true };
    const registered = await store.workers(Infinity).catch(() => []); // not worth a try of the job
    const holder = holderOf(registered, job.id, heartbeat.workerId);
    const key = `${job.id}:${job.stalledCounter}`;
    return { again: true, stalled: { key, step: task.step, ...(holder ? { from: holder.id } : {}) } };
  };

  // One BullMQ worker per queue and partition served; the partitions of a queue share its
  // `concurrency` slots (SharedSlots; one partition alone: BullMQ's own concurrency). BullMQ does
  // not close a connection it was given: ours to quit after `worker.close()`.
  const lostJobs = new LostJobs();
  const consumers = queues.flatMap((queue) => served.map((partition) => ({ queue, partition })));
  const slots = new Map(queues.map((queue) => [queue, served.length > 1 ? new SharedSlots(concurrency) : undefined]));
  const workerConnections = consumers.map(() => redis.duplicate());
  const workers = consumers.map(({ queue, partition }, i) => {
    const slot = slots.get(queue);
    const partitionKeys = partitions.all[partition]!;
    const worker: Worker = new Worker(
      partitionKeys.stepQueueOf(queue),
      slot
        ? (job: Job, token?: string, signal?: AbortSignal) =>
            slot.run(worker, job, () => processJob(job, token, signal))
        : processJob,
      {
        connection: workerConnections[i]!,
        prefix: partitionKeys.prefix,
        concurrency,
        lockDuration,
        stalledInterval,
        maxStalledCount,
        skipVersionCheck,
        settings: { backoffStrategy: stepBackoff },
        // Started once this worker has joined the registry (below): a step taken before that
        // would belong to no live worker, and the ready line would come after its first steps.
        autorun: false,
      },
    );
    slot?.add(worker);
    worker.on('error', (error) => {
      // BullMQ's word on a job this worker gave up (lost lock, fenced): said once, by lostJobs.
      if (!lostJobs.covers(error)) onError(error);
    });
    // Another worker took the job (its stalled check, or a takeover while this worker was paused
    // or starved): the step stops here and its result is dropped, once, rather than running on
    // and retrying the lock every few seconds.
    worker.on('lockRenewalFailed', (ids: string[]) => {
      const jobIds = ids.filter((jobId) => !lostJobs.has(jobId));
      for (const jobId of jobIds) {
        lostJobs.add(jobId);
        worker.cancelJob(jobId, lostStep(`the lock of job ${jobId} was lost: another worker runs its step`) as never);
      }
      if (jobIds.length > 0)
        log(
          `lost the lock of ${jobIds.length} job(s): ${jobIds.join(', ')}; stopped their steps and dropped their results`,
        );
    });
    worker.on('failed', (job, error) => {
      if (!job) return;
      if (job.name === TICK_JOB) {
        if (job.attemptsMade >= (job.opts.attempts ?? 1))
          onError(new Error(`schedule '${tickOfJob(job).schedule.name}': a tick failed for good: ${error.message}`));
        return;
      }
      // Fires for every failed try; only a job that failed for good needs the run told. Not
      // awaited: an event listener cannot be; errors go to onError.
      void job
        .getState()
        .then((state) => (state === 'failed' ? driver.taskFailed(taskOfJob(job), error, job.attemptsMade) : undefined))
        .catch(onError);
    });
    return worker;
  });
  await Promise.all(workers.map((worker) => worker.waitUntilReady()));
  const liveness = new RedisLiveness(redis, { server: serverOf(redis), timeoutMs: pingTimeoutMs, onError, log });
  liveness.start();
  /**
   * This worker was declared dead while it lived (paused or starved past the lapse) and its steps
   * were taken over: it stops them, drops their results, and rejoins under a new id.
   */
  const onFenced = (): void => {
    const fencedId = heartbeat.workerId;
    // Another worker claimed its registry entry after no heartbeat for at least the lapse, or the
    // entry went some other way (a purge): either way its steps may run elsewhere now.
    const reason = `worker ${fencedId} was taken out of the worker registry (declared dead after at least ${WORKER_LAPSE_MS / 1000} s without a heartbeat, or removed)`;
    // No new job until it has joined again under its new id: a step taken meanwhile by a worker
    // that then died unregistered would wait for BullMQ's lock expiry.
    for (const worker of workers) void worker.pause(true);
    for (const jobId of runningJobs) lostJobs.add(jobId);
    for (const worker of workers) worker.cancelAllJobs(lostStep(reason) as never);
    const rejoined = newWorkerId();
    void (async () => {
      const stopped = await driver.fence(reason);
      driver.rejoin(rejoined);
      await heartbeat.rejoin(rejoined);
      return stopped;
    })()
      .then((stopped) => {
        for (const worker of workers) worker.resume();
        const held =
          stopped === 0 ? 'it held no step' : `stopped the ${stopped} step(s) it held here and dropped their results`;
        log(`fenced: ${reason} (was it paused or starved?); ${held}; rejoined as ${rejoined}`);
      })
      .catch(onError);
  };
  const parks = new ParkRecheck(redis, partitions, scheduler, { served, queues, log });
  const heartbeat = new WorkerHeartbeat(store, scheduler, redis, {
    worker: {
      id: workerId,
      host: hostname(),
      pid: process.pid,
      concurrency,
      flows: registry.names(),
      queues,
      startedAt: clock.now(),
      // The BullMQ worker ids, which prefix its jobs' lock tokens, one per queue served.
      meta: { bullmq: workers.map((worker) => worker.id).join(',') },
    },
    active: () => active,
    jobs: () => runningJobs,
    lapseMs: WORKER_LAPSE_MS,
    maxStalledCount,
    maxLoopLagMs: positiveInteger('maxLoopLagMs', options.maxLoopLagMs, DEFAULT_MAX_LOOP_LAG_MS),
    thread: { connection: options.connection, readyCheck: server.info, keys: store.registryKeys() },
    onFenced,
    onBeat: () => Promise.all([clock.sync(), driver.renewBudget()]),
    sweeps: [
      // Hand-offs to other partitions whose transition's worker died before applying them.
      () => store.applyLateHandoffs(LATE_HANDOFF_MS).then((wakes) => scheduler.promote(wakes)),
      // Cancels cascading to a fan-out's children whose canceller died in the middle.
      (signal) => resumeCascades(store, scheduler, LATE_CASCADE_MS, signal),
      // Ids of expired runs left in the runs index (list() drops them too, but may never come).
      (signal) => store.trimIndex({ minIntervalMs: TRIM_INDEX_INTERVAL_MS, signal }),
      // Parked runs whose wake a cluster failover may have lost (Redis replicates asynchronously).
      (signal) => parks.sweep(signal),
      // Agents' turns whose process died between two of their transitions.
      ...(agentTypes.length === 0 ? [] : [() => agents.recover(LATE_AGENT_TURN_MS, LATE_AGENT_INBOX_MS)]),
      // Wait cycles of asks parked in different partitions, which their parks could not see.
      ...(agentTypes.length === 0 || store.partitions.count === 1
        ? []
        : [() => store.failWaitCycles().then((wakes) => scheduler.promote(wakes))]),
    ],
    recoverTaken: (taskIds) => driver.recoverTaken(taskIds),
    leases: () => driver.budgetHolds(),
    releaseLeases: async (holds) => scheduler.promote((await store.releaseBudget(holds)).wakes),
    log,
    onError,
  });
  await heartbeat.start();
  leasesTaken = () => heartbeat.leasesTaken();
  jobRunning = (id, running) => heartbeat.jobRunning(id, running);
  // Agents' reminders: every worker with agent types fires those due (each once: one script).
  const reminders =
    agentTypes.length === 0
      ? undefined
      : new ReminderTimer(
          () => agents.fireReminders(),
          clock,
          REMINDER_POLL_MS,
          (error) => onError(error as Error),
        );
  if (reminders) {
    agents.reminderSet = (due) => reminders.set(due);
    reminders.start();
  }
  // run() resolves when the worker closes; its errors are the worker's.
  for (const worker of workers) worker.run().catch(onError);
  // Metrics the application's reader collects (no-ops without a MeterProvider).
  const unobserve = observeGauges({
    queueDepth: async () => {
      let depth = 0;
      for (const { queue, partition } of consumers) {
        const counts = await scheduler.queueOf(queue, partition).getJobCounts('waiting', 'prioritized');
        depth += (counts.waiting ?? 0) + (counts.prioritized ?? 0);
      }
      return depth;
    },
    parkedRuns: () => store.parkedRuns(),
    ...(agentTypes.length === 0
      ? {}
      : { agentInboxes: () => inboxDepths(store, (type) => agents.definition(type)?.options.capacity) }),
  });

  let closing: Promise<void> | undefined;
  return {
    partitions: { count: partitions.count, served },
    close: () =>
      (closing ??= (async () => {
        unobserve();
        await reminders?.close();
        driver.stopContinuing();
        await Promise.all(workers.map(closeBullmqWorker));
        liveness.stop();
        await heartbeat.stop();
        await scheduler.close().catch(() => {});
        await Promise.all(
          [redis, subscriber, ...workerConnections].map((connection) => connection.quit().catch(() => {})),
        );
      })()),
  };
}

/**
 * How long a concurrency lease of a node's `limits` lasts unless renewed (at every beat), in ms: a
 * safety net behind the takeover, which gives a dead worker's leases back within the lapse.
 */
const BUDGET_LEASE_MS = 60_000;

/**
 * How long a hand-off to another partition may wait before a worker's heartbeat applies it: its
 * transition's caller applies it at once, so one this old was left by a worker that died.
 */
const LATE_HANDOFF_MS = 5000;

/**
 * Longest a worker waits between two looks at the reminders due, in ms: reminders other processes
 * set are found this late at most (its own, at once).
 */
const REMINDER_POLL_MS = 100;

/** How often a worker drops the ids of expired runs from the runs index, in ms (RedisRunStore.trimIndex). */
const TRIM_INDEX_INTERVAL_MS = 60_000;

/**
 * How long a cascade of cancels may go without progress before a worker finishes it, in ms: its
 * canceller reports progress before each batch of children (kernel/cancel-run.ts); a worker
 * claims a due one for as long again.
 */
const LATE_CASCADE_MS = 10_000;

/**
 * How long an agent's turn may run, or its inbox wait with a message, before a worker's heartbeat
 * looks at it (ms): the process that started or ended it finishes it at once, so one this old was
 * left by a process that died between two transitions; a look at a turn still running changes
 * nothing, and claims it for as long again.
 */
const LATE_AGENT_TURN_MS = 5000;

/**
 * How long a message may wait in an idle agent's inbox before a worker's heartbeat starts its turn
 * (ms): the sender starts it at once when it has the agent's type; a client without it (`queueflow
 * send`) leaves it to the workers.
 */
const LATE_AGENT_INBOX_MS = 500;

/** The partitions a worker serves: every one of `count`, or a non-empty list of them, each once. */
function servedPartitions(partitions: unknown, count: number): number[] {
  if (partitions === undefined) return Array.from({ length: count }, (_, i) => i);
  if (!Array.isArray(partitions) || partitions.length === 0)
    throw invalidOption('startWorker', 'servePartitions', 'a non-empty array of partition numbers', partitions);
  partitions.forEach((partition: unknown, i) => {
    if (!Number.isInteger(partition) || (partition as number) < 0 || (partition as number) >= count)
      throw invalidOption('startWorker', `servePartitions[${i}]`, `a partition from 0 to ${count - 1}`, partition);
  });
  return [...new Set(partitions as number[])].sort((a, b) => a - b);
}

/** The queues a worker serves: a non-empty list of queue names, each once. */
function queuesOption(queues: unknown): string[] {
  if (queues === undefined) return [DEFAULT_QUEUE];
  if (!Array.isArray(queues) || queues.length === 0)
    throw invalidOption('startWorker', 'queues', 'a non-empty array of queue names', queues);
  return [...new Set(queues.map((queue, i) => checkQueueName('startWorker', `queues[${i}]`, queue)))];
}

function nonNegativeInteger(option: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 0)
    throw invalidOption('startWorker', option, 'an integer from 0 and up', value);
  return value;
}

function positiveInteger(option: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1)
    throw invalidOption('startWorker', option, 'an integer from 1 and up', value);
  return value;
}
