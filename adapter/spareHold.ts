import { Socket } from 'node:net';
import { CONTROL_FD, SPARE_ARG, type SpareHandover } from '../common/startHint';

/** A handover line longer than this is not one: the spare gives up rather than buffer it. */
const MAX_LINE = 4096;
const HINT = /^[0-9a-f]{32}$/;

/**
 * The spare's side of the handover (core/dap/adapterSpare.ts): says `ready` on the control pipe, then
 * waits for the one line that hands it a session. Resolves `undefined` when the pipe closes or breaks
 * first, or carries anything but that line: whoever kept the spare no longer wants it. Rejects when
 * there is no control pipe.
 */
export function awaitHandover(): Promise<SpareHandover | undefined> {
  let control: Socket;
  try {
    control = new Socket({ fd: CONTROL_FD, readable: true, writable: true });
  } catch (err) {
    return Promise.reject(
      new Error(
        `started with ${SPARE_ARG}, but descriptor ${CONTROL_FD} is not a control pipe (${(err as Error).message}); ` +
          `start it without ${SPARE_ARG}, or as core/dap/adapterSpare.ts does`,
      ),
    );
  }
  return new Promise((resolve) => {
    let text = '';
    const finish = (handover: SpareHandover | undefined): void => {
      control.removeAllListeners('data');
      control.removeAllListeners('end');
      control.removeAllListeners('close');
      // An error after this point (the keeper closing its end) means nothing any more.
      control.on('error', () => undefined);
      control.destroy();
      resolve(handover);
    };
    control.setEncoding('utf8');
    control.on('data', (chunk: string) => {
      text += chunk;
      const end = text.indexOf('\n');
      if (end >= 0) finish(parseHandover(text.slice(0, end)));
      else if (text.length > MAX_LINE) finish(undefined);
    });
    control.on('end', () => finish(undefined));
    control.on('close', () => finish(undefined));
    control.on('error', () => finish(undefined));
    control.write('ready\n');
  });
}

/** The handover line, checked: a hint is 32 hex digits (common/startHint.ts) or absent. */
export function parseHandover(line: string): SpareHandover | undefined {
  try {
    const value = JSON.parse(line) as { hint?: unknown };
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
    if (value.hint === undefined) return {};
    return typeof value.hint === 'string' && HINT.test(value.hint) ? { hint: value.hint } : undefined;
  } catch {
    return undefined;
  }
}
