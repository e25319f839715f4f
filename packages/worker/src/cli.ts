#!/usr/bin/env node
import { setWarningHandler } from '@queueflow/runtime';
import { errorLine, queueflowProgram } from './cli/program.js';

// `run` and `wait` say themselves when no worker takes a run (with how to start one).
setWarningHandler((code, message) => {
  if (code !== 'QF_NO_WORKER') process.emitWarning(message, { type: 'QueueflowWarning', code });
});

queueflowProgram()
  .parseAsync()
  .catch((error: unknown) => {
    console.error(errorLine(error));
    process.exit(1);
  });
