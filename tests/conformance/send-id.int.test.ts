/**
 * Contract: `engine.send` returns the message's id, the one its receiver sees (`message.id`), on
 * both engines; `queueflow send` prints it.
 */
import { describe, expect, it } from 'vitest';
import { waitOnce, type WaitOnceShared } from '../mailbox/mailbox-flows.js';
import { engines, useEngine } from './engine-harness.js';

describe.each(engines)('%s: engine.send', (name) => {
  const setup = useEngine(name);

  it('returns the id the receiving run sees', async () => {
    const { engine, until } = await setup('send-id', { flows: [waitOnce] });
    const handle = await engine.start(waitOnce, {} as WaitOnceShared, { params: { address: 'id-desk' } });
    await until(handle.id, 'the run to park on its mailbox', (info) => info.status === 'waiting');
    const id = await engine.send('id-desk', { hello: 'you' });
    expect(id).toEqual(expect.any(String));
    const result = await handle.result();
    expect(result.shared.got).toEqual({ id, body: { hello: 'you' } });
  });
});
