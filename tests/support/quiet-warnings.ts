/**
 * A vitest setup file: keeps the flood of `QF_SUCCESSOR_OVERWRITTEN` warnings out of the test
 * output. Many test graphs rebuild a loop or rewire a node on purpose, and each such `next`/`on`
 * printed a process warning. Before every test this installs a warning handler that drops that
 * code and hands every other code to `process.emitWarning` as the default channel does.
 *
 * A test that asserts on warnings replaces the handler in its own `beforeEach` (that runs after
 * this one): `captureWarnings()` in packages/runtime/test/helpers.ts, or
 * `setWarningHandler(null)` for a test of the default channel itself.
 *
 * The handler is set on both copies of the channel a test process may load: the runtime's
 * sources (the runtime's unit tests import them) and its build (`@queueflow/runtime`).
 */
import { beforeEach } from 'vitest';
import { setWarningHandler as setBuiltHandler, type WarningHandler } from '@queueflow/runtime';
import { setWarningHandler as setSourceHandler } from '../../packages/runtime/src/core/warnings.js';

const quiet: WarningHandler = (code, message) => {
  if (code === 'QF_SUCCESSOR_OVERWRITTEN') return;
  process.emitWarning(message, { type: 'QueueflowWarning', code });
};

function installQuietHandler(): void {
  setBuiltHandler(quiet);
  setSourceHandler(quiet);
}

installQuietHandler(); // for graphs built while a test file is imported
beforeEach(installQuietHandler); // again for each test: a test may have restored the default
