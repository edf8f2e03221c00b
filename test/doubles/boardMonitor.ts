import type { BoardDouble } from './boardDouble';
import { u32FromLeHex } from './rspFraming';

/**
 * TEST DOUBLE support — `monitor` commands (`qRcmd`) on the board double. The commands a probe's
 * server has for reset are answered as OpenOCD 0.12 answers them:
 *  - `reset halt`, `reset init`, `soft_reset_halt`: a reset that leaves the core halted at its reset
 *    vector; on a Cortex-M part it prints OpenOCD's halt line
 *    (`[stm32f4x.cpu] halted due to debug-request, current mode: Thread` / `xPSR: … pc: … msp: …`);
 *  - `halt`: the core is already halted whenever GDB (all-stop) can send a command: nothing to do;
 *  - `reset`, `reset run`: refused with a message, since QEMU's gdbstub cannot let the core run
 *    behind GDB's back and be read meanwhile, as a probe can;
 *  - `board status`: the double's own, its counts (a test reads them through the control side).
 * Anything else goes to QEMU's own monitor (HMP), unchanged, as QEMU's gdbstub runs it: `info
 * registers`, `system_reset` … Like OpenOCD's qRcmd handler, the packet ends `OK` even when the
 * command failed; what it printed is the answer.
 */
export async function boardMonitor(
  board: BoardDouble,
  command: string,
  output: (packet: Buffer) => void,
): Promise<Buffer | string> {
  const words = command.trim().split(/\s+/);
  const print = (text: string): void => output(Buffer.from(`O${Buffer.from(text, 'latin1').toString('hex')}`));
  const line = words.join(' ');
  if (line === 'reset halt' || line === 'reset init' || line === 'soft_reset_halt') {
    await board.resetHalt();
    const report = await haltReport(board);
    if (report) print(report);
    return 'OK';
  }
  if (line === 'halt') return 'OK';
  if (line === 'reset' || line === 'reset run') {
    print(
      `The board double does not let the core run from reset behind GDB's back (\`${line}\`): ` +
        'use `monitor reset halt`, then continue.\n',
    );
    return 'OK';
  }
  if (words[0] === 'board') {
    print(`${JSON.stringify(board.stats())}\n`);
    return 'OK';
  }
  return await board.forward(`qRcmd,${Buffer.from(command, 'latin1').toString('hex')}`, output);
}

async function haltReport(board: BoardDouble): Promise<string | undefined> {
  const spec = board.layout.profile.haltReport;
  if (!spec) return undefined;
  const read = async (n: number): Promise<number> =>
    u32FromLeHex((await board.forward(`p${n.toString(16)}`)).toString('latin1'));
  const pc = await read(spec.registers.pc);
  const sp = await read(spec.registers.sp);
  const xpsr = await read(spec.registers.xpsr);
  const h = (v: number): string => `0x${v.toString(16).padStart(8, '0')}`;
  // After a reset the core is in Thread mode on the main stack (CONTROL.SPSEL = 0).
  return (
    `[${spec.target}] halted due to debug-request, current mode: Thread \n` +
    `xPSR: ${h(xpsr)} pc: ${h(pc)} msp: ${h(sp)}\n`
  );
}
