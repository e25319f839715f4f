import type { IncomingMessage, ServerResponse } from 'node:http';
import FindMyWay from 'find-my-way';
import jsonPatch from 'fast-json-patch';
import type { Json, JsonObject } from '@queueflow/runtime';
import { isFinal } from '@queueflow/runtime/kernel';
import type { RunCensus } from './run-census.js';
import { countsBody, summaryOf, type ChildrenPageBody, type RunsPageBody, type StepDiffBody } from './studio-bodies.js';
import { queuesOf, type PatchOperation, type StudioEngine, type RunSummary } from './studio-engine.js';
import { StudioHttpError } from './studio-http-error.js';
import { allChildren, countByStatus, MAX_CENSUS_CHILDREN } from './children-census.js';
import { StudioConversations } from './studio-conversations.js';
import {
  addressOf,
  agentRefOf,
  agentTypeOf,
  flowOf,
  integerOf,
  jsonPatchOf,
  messageIdOf,
  objectOf,
  optionalIntegerOf,
  readJsonBody,
  runIdOf,
  statusOf,
} from './studio-input.js';
import type { StudioLive } from './studio-live.js';

/** What a route gets. */
interface RouteContext {
  req: IncomingMessage;
  res: ServerResponse;
  params: Record<string, string | undefined>;
  query: URLSearchParams;
  /** An action's JSON body (`{}` when it sent none). */
  body: unknown;
}

/** A route answers with a JSON body (status 200), or `undefined` when it answered itself. */
type Route = (context: RouteContext) => Promise<unknown>;

interface RouteStore {
  route: Route;
  /** Changes something: refused when read-only. */
  action: boolean;
}

export interface StudioApiOptions {
  readOnly: boolean;
  /** Largest JSON body of an action, in bytes. */
  maxBodyBytes: number;
  /** What `GET /api/meta` tells the page. */
  meta: Record<string, Json>;
}

/** Most runs or children on one page. */
const MAX_PAGE = 500;

/**
 * The studio's JSON API under `/api`: reads (runs with filters, paging, counts and id search; a
 * run, its history, its `shared` at a step and each step's diff; fan-out children; flow graphs;
 * workers; mailboxes; agents; conversations), live updates (`/api/events`), and the actions
 * cancel, retry, fork (a run, a conversation), redeliver and answer, refused with 403 when
 * read-only. Every input is checked; errors go out as `{ error: { code, message } }`.
 */
export class StudioApi {
  private readonly router = FindMyWay({ ignoreTrailingSlash: true, maxParamLength: 1000 });

  constructor(
    private readonly engine: StudioEngine,
    private readonly census: RunCensus,
    private readonly live: StudioLive,
    private readonly options: StudioApiOptions,
  ) {
    const get = (path: string, route: Route): void => this.on('GET', path, route, false);
    const post = (path: string, route: Route): void => this.on('POST', path, route, true);

    get('/api/meta', async () => this.options.meta);
    get('/api/runs', (c) => this.runs(c.query));
    get('/api/runs/counts', async () => countsBody(await this.census.get()));
    get('/api/runs/:id', async (c) => {
      const id = runIdOf(c.params.id);
      const info = await this.need('get')(id);
      if (!info) throw new StudioHttpError(404, 'RUN_NOT_FOUND', `no run '${id}' (never started, or expired)`);
      return info;
    });
    get('/api/runs/:id/history', async (c) => this.need('history')(runIdOf(c.params.id)));
    // The run's event log; an engine without one has none to show (the timeline derives its events).
    get('/api/runs/:id/events', async (c) => {
      const id = runIdOf(c.params.id);
      return this.engine.runEvents ? this.engine.runEvents(id) : [];
    });
    get('/api/runs/:id/shared', async (c) => {
      const step = integerOf(c.query.get('step') ?? undefined, 'step', 0);
      return { step, shared: await this.need('sharedAt')(runIdOf(c.params.id), step) };
    });
    get('/api/runs/:id/steps/:step/diff', (c) => this.stepDiff(runIdOf(c.params.id), c.params.step));
    get('/api/runs/:id/children', (c) => this.children(runIdOf(c.params.id), c.query));
    get('/api/flows/:flow/graph', async (c) => {
      const flow = flowOf(c.params.flow) ?? '';
      const graph = await this.need('graph')(flow);
      if (!graph) throw new StudioHttpError(404, 'UNKNOWN_FLOW', `this studio's engine does not know flow '${flow}'`);
      return graph;
    });
    get('/api/workers', async () => this.need('workers')());
    get('/api/queues', async () => {
      this.need('queues');
      this.need('budgets');
      return queuesOf(this.engine);
    });
    get('/api/mailboxes', async (c) => {
      const messages = optionalIntegerOf(c.query.get('messages') ?? undefined, 'messages', 20, 0, 200);
      return this.need('mailboxes')({ messages });
    });
    get('/api/agents', async (c) => {
      const type = agentTypeOf(c.query.get('type') ?? undefined);
      const cursor = c.query.get('cursor') || undefined;
      const limit = optionalIntegerOf(c.query.get('limit') ?? undefined, 'limit', 50, 1, MAX_PAGE);
      return this.need('agents')({
        limit,
        ...(type === undefined ? {} : { type }),
        ...(cursor === undefined ? {} : { cursor: agentRefOf(cursor) }),
      });
    });
    // An agent's address holds ':' and '/': it goes in the query, not the path.
    get('/api/agent', async (c) => {
      const ref = agentRefOf(c.query.get('ref') ?? undefined);
      const info = await this.need('agent')(ref);
      if (!info)
        throw new StudioHttpError(404, 'AGENT_NOT_FOUND', `no agent '${ref}' (never sent a message, or deleted)`);
      return { ref, ...info, history: await this.need('agentHistory')(ref) };
    });
    // A conversation's id may hold '/' and '~' (a fork's): it goes in the query, as an agent's address does.
    const conversations = new StudioConversations((name) => this.need(name));
    get('/api/conversations', (c) => conversations.page(c.query));
    get('/api/conversation', (c) => conversations.one(c.query));
    get('/api/conversation/turn', (c) => conversations.turn(c.query));
    get('/api/events', async (c) => {
      this.need('watch');
      this.live.attach(c.req, c.res);
      return undefined;
    });

    post('/api/runs/:id/cancel', async (c) => {
      const id = runIdOf(c.params.id);
      // The engine's cancel of an ended run changes nothing: say so rather than answer "cancelled".
      const run = await this.need('get')(id);
      if (run && isFinal(run.status))
        throw new StudioHttpError(409, 'RUN_ENDED', `run '${id}' has already ended (${run.status}): nothing to cancel`);
      await this.need('cancel')(id, { by: 'studio' });
      return { id, cancelled: true };
    });
    post('/api/runs/:id/retry', async (c) => {
      const handle = await this.need('retry')(runIdOf(c.params.id));
      return { id: handle.id };
    });
    post('/api/runs/:id/fork', (c) => this.fork(runIdOf(c.params.id), c.body));
    post('/api/agent/redeliver', async (c) => {
      const body = objectOf(c.body, 'the body');
      const ref = agentRefOf(body.ref);
      const messageId = messageIdOf(body.messageId);
      await this.need('redeliver')(ref, messageId);
      return { ref, messageId, redelivered: true };
    });
    post('/api/conversation/fork', (c) => conversations.fork(c.body));
    post('/api/answers', async (c) => {
      const body = objectOf(c.body, 'the body');
      const address = addressOf(body.address);
      const messageId = messageIdOf(body.messageId);
      if (!('body' in body)) throw new StudioHttpError(400, 'BAD_REQUEST', 'expected `body`: the answer (any JSON)');
      await this.need('answer')(address, messageId, body.body as Json);
      return { address, messageId, answered: true };
    });
  }

  /** Answers a request for `path` (below the studio's base path, starting `/api/`). */
  async handle(req: IncomingMessage, res: ServerResponse, path: string, query: URLSearchParams): Promise<void> {
    const method = req.method === 'HEAD' ? 'GET' : (req.method ?? 'GET');
    const found = method === 'GET' || method === 'POST' ? this.router.find(method, path) : null;
    if (!found) {
      const allowed = (['GET', 'POST'] as const).filter((m) => this.router.find(m, path));
      if (allowed.length > 0) {
        res.setHeader('Allow', allowed.join(', '));
        throw new StudioHttpError(405, 'METHOD_NOT_ALLOWED', `${method} ${path}: use ${allowed.join(' or ')}`);
      }
      throw new StudioHttpError(404, 'NOT_FOUND', `no API at ${path}`);
    }
    const { route, action } = found.store as RouteStore;
    if (action && this.options.readOnly)
      throw new StudioHttpError(403, 'READ_ONLY', 'this studio is read-only: actions are turned off');
    // Every action reads a JSON body, even one that needs none: a form on another site cannot
    // send that type without a CORS preflight, which the studio never answers.
    const input = action ? await readJsonBody(req, this.options.maxBodyBytes) : undefined;
    const body = await route({ req, res, params: found.params, query, body: input });
    if (body === undefined) return;
    const text = JSON.stringify(body);
    res.writeHead(200, {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(text),
      'Cache-Control': 'no-store',
    });
    res.end(req.method === 'HEAD' ? undefined : text);
  }

  private on(method: 'GET' | 'POST', path: string, route: Route, action: boolean): void {
    const store: RouteStore = { route, action };
    this.router.on(method, path, () => {}, store);
  }

  /** The engine's method `name`, or a 501 when this engine has none. */
  private need<K extends keyof StudioEngine>(name: K): NonNullable<StudioEngine[K]> {
    const method = this.engine[name] as unknown;
    if (typeof method !== 'function')
      throw new StudioHttpError(501, 'NOT_IMPLEMENTED', `this engine has no ${String(name)}(): it cannot show that`);
    return (method as (...args: unknown[]) => unknown).bind(this.engine) as NonNullable<StudioEngine[K]>;
  }

  private async runs(query: URLSearchParams): Promise<RunsPageBody> {
    const status = statusOf(query.get('status') ?? undefined);
    const flow = flowOf(query.get('flow') ?? undefined);
    const offset = optionalIntegerOf(query.get('offset') ?? undefined, 'offset', 0, 0, Number.MAX_SAFE_INTEGER);
    const limit = optionalIntegerOf(query.get('limit') ?? undefined, 'limit', 50, 1, MAX_PAGE);
    const search = (query.get('q') ?? '').trim();
    if (search.length > 200) throw new StudioHttpError(400, 'BAD_REQUEST', 'expected `q` of at most 200 characters');
    const matches = (run: RunSummary): boolean => (!status || run.status === status) && (!flow || run.flow === flow);

    if (search) {
      // An exact id first (fan-out children too, which lists leave out), then ids containing it.
      const exact = /^[A-Za-z0-9._-]+$/.test(search) ? await this.need('get')(search) : undefined;
      const census = await this.census.get();
      const found = census.runs.filter((run) => run.id !== search && run.id.includes(search) && matches(run));
      if (exact && matches(exact)) found.unshift(summaryOf(exact));
      return {
        runs: found.slice(offset, offset + limit),
        offset,
        limit,
        hasMore: found.length > offset + limit,
        total: found.length,
      };
    }
    const [listed, census] = await Promise.all([
      this.need('list')({
        ...(status ? { status } : {}),
        ...(flow ? { flow } : {}),
        offset,
        limit: limit + 1,
      }),
      this.census.get().catch(() => undefined),
    ]);
    const counts = census ? (flow ? census.flows[flow] : census.counts) : undefined;
    const total = census && !census.capped ? (counts ? (status ? counts[status] : sum(counts)) : 0) : undefined;
    return {
      runs: listed.slice(0, limit),
      offset,
      limit,
      hasMore: listed.length > limit,
      ...(total === undefined ? {} : { total: Math.max(total, offset + Math.min(listed.length, limit)) }),
    };
  }

  /**
   * `shared` before committed step `step` and after it: before from `sharedAt`, after by the
   * step's recorded patch. While a run waits on a fan-out the engine has no checkpoint of `shared`
   * between fan-out and fan-in, so the fan-in step's `before` is the fan-out step's own after.
   */
  private async stepDiff(runId: string, stepParam: string | undefined): Promise<StepDiffBody> {
    const step = integerOf(stepParam, 'step', 0);
    const history = await this.need('history')(runId);
    const index = history.findIndex((record) => record.step === step);
    if (index < 0)
      throw new StudioHttpError(
        404,
        'NOT_FOUND',
        `run '${runId}' has no record of step ${step} (not committed, or dropped)`,
      );
    const sharedAt = this.need('sharedAt');
    let before: JsonObject;
    try {
      before = await sharedAt(runId, step);
    } catch (error) {
      const previous = history[index - 1];
      if ((error as { code?: unknown }).code !== 'INVALID_OPTION' || previous?.step !== step - 1) throw error;
      before = applied(await sharedAt(runId, previous.step), previous.patch);
    }
    return { step, before, after: applied(before, history[index]!.patch) };
  }

  private async children(runId: string, query: URLSearchParams): Promise<ChildrenPageBody> {
    const offset = optionalIntegerOf(query.get('offset') ?? undefined, 'offset', 0, 0, Number.MAX_SAFE_INTEGER);
    const limit = optionalIntegerOf(query.get('limit') ?? undefined, 'limit', 100, 1, MAX_PAGE);
    const status = statusOf(query.get('status') ?? undefined);
    // A fan-out of up to MAX_CENSUS_CHILDREN is read whole: counted by status, and filtered.
    const all = await allChildren(this.engine, runId);
    if (all) {
      if (all.length === 0 && !(await this.need('get')(runId)))
        throw new StudioHttpError(404, 'RUN_NOT_FOUND', `no run '${runId}' (never started, or expired)`);
      const shown = status ? all.filter((child) => child.status === status) : all;
      const page = shown.slice(offset, offset + limit);
      return { children: page, offset, limit, hasMore: shown.length > offset + limit, counts: countByStatus(all) };
    }
    if (status)
      throw new StudioHttpError(
        400,
        'BAD_REQUEST',
        `a fan-out of more than ${MAX_CENSUS_CHILDREN} children cannot be filtered by status`,
      );
    const children = await this.need('children')(runId, { offset, limit: limit + 1 });
    // The engine lists no child for an unknown run; the API answers 404 for it, as for its other parts.
    if (children.length === 0 && !(await this.need('get')(runId)))
      throw new StudioHttpError(404, 'RUN_NOT_FOUND', `no run '${runId}' (never started, or expired)`);
    return { children: children.slice(0, limit), offset, limit, hasMore: children.length > limit };
  }

  /**
   * `POST /api/runs/:id/fork` with `{ step, patch? | shared?, params? }`: an edited `shared` is
   * turned into the JSON Patch from the run's `shared` at that step (fast-json-patch `compare`).
   */
  private async fork(runId: string, input: unknown): Promise<{ id: string; patch: PatchOperation[] }> {
    const body = objectOf(input, 'the body');
    const step = integerOf(body.step, 'step', 0);
    if (body.patch !== undefined && body.shared !== undefined)
      throw new StudioHttpError(400, 'BAD_REQUEST', 'give `patch` or `shared`, not both');
    let patch: PatchOperation[] = [];
    if (body.shared !== undefined) {
      const edited = objectOf(body.shared, '`shared`');
      const base = await this.need('sharedAt')(runId, step);
      patch = jsonPatch.compare(base, edited);
    } else if (body.patch !== undefined) {
      patch = jsonPatchOf(body.patch);
    }
    const params = body.params === undefined ? undefined : (objectOf(body.params, '`params`') as JsonObject);
    const handle = await this.need('fork')(runId, {
      step,
      ...(patch.length > 0 ? { patch } : {}),
      ...(params ? { params } : {}),
    });
    return { id: handle.id, patch };
  }
}

/** `document` with `patch` applied, as a new value. */
function applied(document: JsonObject, patch: PatchOperation[]): JsonObject {
  return jsonPatch.applyPatch(structuredClone(document), structuredClone(patch), false, true).newDocument;
}

function sum(counts: Record<string, number>): number {
  return Object.values(counts).reduce((a, b) => a + b, 0);
}
