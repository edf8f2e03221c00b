import type { FixtureTarget } from './paths';
import type { AdapterHarness } from './dap';

/** What the interrupt sampler changes on a target, read over DAP (the target halted). */
export interface TargetStateReader {
  read(h: AdapterHarness): Promise<Record<string, string>>;
}

async function register(h: AdapterHarness, name: string): Promise<string> {
  const frameId = (await h.topFrame()).id;
  return (await h.dc.evaluateRequest({ expression: `$${name}`, frameId, context: 'watch' })).body.result;
}

async function word(h: AdapterHarness, address: number): Promise<string> {
  const body = (await h.dc.customRequest('readMemory', { memoryReference: `0x${address.toString(16)}`, count: 4 }))
    .body as { data: string };
  return `0x${Buffer.from(body.data, 'base64').readUInt32LE(0).toString(16)}`;
}

async function readAll(
  h: AdapterHarness,
  registers: string[],
  words: Record<string, number>,
): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const r of registers) out[r] = await register(h, r);
  for (const [name, address] of Object.entries(words)) out[name] = await word(h, address);
  return out;
}

/** Per target: the trap vector and interrupt enables, the interrupt controller and the timer the sampler uses. */
export const TARGET_STATE: Record<FixtureTarget, TargetStateReader> = {
  rv32: {
    read: (h) =>
      readAll(h, ['mtvec', 'mscratch', 'mie'], {
        'PLIC priority 11': 0x0c00_002c,
        'PLIC M-mode enables': 0x0c00_2000,
        'PLIC M-mode threshold': 0x0c20_0000,
        'RTC IRQ_ENABLED': 0x0010_1010,
      }),
  },
  'cortex-m4': {
    read: (h) =>
      readAll(h, [], {
        VTOR: 0xe000_ed08,
        'NVIC ISER0': 0xe000_e100,
        'NVIC IPR2 (IRQ 8-11)': 0xe000_e408,
        'TIMER1 CTRL': 0x4000_1000,
        'TIMER1 RELOAD': 0x4000_1008,
      }),
  },
};
