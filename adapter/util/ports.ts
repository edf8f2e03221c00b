import { createServer } from 'node:net';
import { CycleLensError, ErrorCode } from '../errors';

/** Asks the kernel for a free TCP port on the loopback interface. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Resolves when `port` can be bound on loopback; otherwise throws the "port in use" error. */
export function assertPortFree(port: number, purpose: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', () =>
      reject(
        new CycleLensError(
          ErrorCode.PortInUse,
          `Port ${port} (${purpose}) is already in use. Stop the program using it, or remove the ` +
            `fixed port from the launch configuration so CycleLens picks a free one.`,
        ),
      ),
    );
    server.listen(port, '127.0.0.1', () => server.close(() => resolve()));
  });
}
