import { createServer } from 'node:http';
import type { Engine } from '@queueflow/runtime';
import { createStudioHandler } from '@queueflow/worker';

/** The studio served for one engine: its address, and how to close it (the engine stays open). */
export interface ServedStudio {
  /** `http://127.0.0.1:<port>/`. */
  url: string;
  close(): Promise<void>;
}

/**
 * Serves queueflow studio for `engine` on 127.0.0.1:`port` (0: any free port), as `--studio` of
 * the example commands does.
 * @throws Error naming `--studio-port` when the port is in use.
 */
export async function serveStudio(engine: Engine, port: number): Promise<ServedStudio> {
  const studio = createStudioHandler({ engine });
  const server = createServer(studio);
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'EADDRINUSE'
          ? new Error(`--studio-port: port ${port} is in use; pick another (0: any free port)`)
          : error,
      ),
    );
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const address = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${address.port}/`,
    close: async () => {
      await studio.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
