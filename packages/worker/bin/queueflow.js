#!/usr/bin/env node
// The `queueflow` command. A committed shim rather than dist/cli.js itself: npm links a
// workspace's bin at install time, before the first build has made dist/.
import '../dist/cli.js';
