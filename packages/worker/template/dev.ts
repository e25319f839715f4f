/**
 * `npm run dev`: runs the flow embedded, in this process: no Redis, no worker.
 * `npm run dev -- Ada` greets Ada.
 */
import { hello, type HelloShared } from './flows.js';

const shared: HelloShared = { name: process.argv[2] ?? 'world' };
const lastAction = await hello.build().run(shared);
console.log(JSON.stringify({ shared, lastAction }, null, 2));
