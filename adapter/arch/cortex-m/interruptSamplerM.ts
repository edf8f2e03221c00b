import type { TargetAccess } from '../../probe/targetAccess';
import type {
  InterruptSamplerArch,
  InterruptSamplerPlan,
  InterruptSamplerRequest,
  SavedState,
  SavedWord,
} from '../../sampling/interruptTypes';
import { CoreExecutedStore } from './sysTickCoreStore';

/**
 * The interrupt sampler on Cortex-M QEMU `mps2-an386` (docs/design.md, "The interrupt sampler").
 *
 * Timer: CMSDK APB timer 1 (0x40001000, IRQ 9), counting the 25 MHz board clock in virtual time;
 * the fixtures' firmware uses timer 0, and SysTick belongs to the injector. Hook: VTOR points at a
 * copy of the firmware's vector table in reserved RAM whose IRQ 9 entry is the sampler's handler.
 * Priority: IRQ 9 gets the highest (0) and every enabled firmware IRQ at 0 moves one step down
 * (0x80), so the sampler preempts the firmware's handlers and samples inside them; their order
 * among themselves is kept unless one already sat at 0x80.
 *
 * The handler (Thumb-2, hand-assembled, position independent, 100 bytes with its two literals)
 * takes the stacked PC from the frame on MSP or PSP (EXC_RETURN bit 2), counts it into its
 * bucket, advances a 32-bit Galois LFSR and sets the timer's reload to base + (lfsr & mask), so
 * each period is random; it counts the samples it took inside a handler (EXC_RETURN bit 3 clear).
 */
const HANDLER_HEX =
  '1ef0040f0cbfeff30880eff30980806912490a68801a4a68d0408a68904228bf104601eb8000d0f800280132c0' +
  'f80028c868400824bf0a695040c8604a6902408b691a44064b9a600122da601ef0080f02bfca690132ca617047' +
  '00bf1111111100100040';
/** The handler's literal holding the state block's address. */
const AREA_LITERAL = 0x5c;
const S = { textBase: 0, shift: 4, buckets: 8, lfsr: 12, taps: 16, mask: 20, base: 24, nested: 28 } as const;
const CODE_AT = 32;
const BUCKETS_AT = 2048;
const STORE_STUB_AT = 1792;
const LFSR_TAPS = 0x8020_0003;

const VTOR = 0xe000_ed08;
const NVIC_ISER0 = 0xe000_e100;
const NVIC_ICER0 = 0xe000_e180;
const NVIC_ICPR0 = 0xe000_e280;
const NVIC_IPR = 0xe000_e400;
const TIMER1 = 0x4000_1000;
const Timer = { ctrl: 0x0, value: 0x4, reload: 0x8, intClear: 0xc } as const;
const TIMER1_IRQ = 9;
/** Vector table words copied: 16 system entries and IRQs 0-111 (512 bytes, VTOR's alignment). */
const VECTOR_WORDS = 128;
/** The board clock the timer counts: 25 MHz, 40 ns of virtual time per tick. */
const NS_PER_TICK = 40;
const DEMOTED = 0x80;

function plan(req: InterruptSamplerRequest): InterruptSamplerPlan | { unsupported: string } {
  if (req.machine !== 'mps2-an386')
    return {
      unsupported:
        `the Cortex-M interrupt sampler knows QEMU's \`mps2-an386\` (CMSDK timer 1); this target is ` +
        `${req.machine ?? 'not QEMU'}`,
    };
  const { area } = req;
  const room = area.size - BUCKETS_AT - 4;
  if (room < 64 * 4)
    return {
      unsupported: `the reserved RAM left for the interrupt sampler (${area.size} bytes) holds too few buckets`,
    };
  let buckets = 1;
  while (buckets * 2 * 4 <= room && buckets < 16384) buckets *= 2;
  const span = req.text.end - req.text.start;
  let shift = 1;
  while (span > buckets << shift) shift++;
  const vtab = Math.ceil((area.start + 256) / 512) * 512;
  const ticks = 2 ** Math.max(4, Math.round(Math.log2(req.meanInterval / NS_PER_TICK)));
  return {
    bucketsAt: area.start + BUCKETS_AT,
    buckets,
    textBase: req.text.start,
    shift,
    nestedAt: area.start + S.nested,
    used: BUCKETS_AT + 4 * (buckets + 1),
    semantics:
      'the stacked PC (the instruction about to run) when CMSDK timer 1 interrupts, at a random ' +
      "point of each interval in virtual time; inside the firmware's interrupt handlers too (the " +
      "sampler's priority is above theirs)",
    async capture(access: TargetAccess): Promise<SavedState> {
      const saved: SavedState = { registers: {}, patchedRegisters: {}, words: [] };
      const word = async (address: number, patch: (o: number) => number): Promise<SavedWord> => {
        const original = await access.readU32(BigInt(address));
        const w = { address, original, patched: patch(original) >>> 0 };
        saved.words.push(w);
        return w;
      };
      const timerCtrl = await access.readU32(BigInt(TIMER1 + Timer.ctrl));
      const enabled = await access.readU32(BigInt(NVIC_ISER0));
      if ((timerCtrl & 1) !== 0 || (enabled & (1 << TIMER1_IRQ)) !== 0)
        throw new Error('the program uses CMSDK timer 1 (or its IRQ 9) itself; the interrupt sampler needs it');
      await word(VTOR, () => vtab);
      // IPR words of IRQs 0-31: IRQ 9 highest, enabled firmware IRQs at 0 one step down.
      for (let w = 0; w < 8; w++) {
        const irqs = [0, 1, 2, 3].map((b) => 4 * w + b);
        if (!irqs.some((i) => i === TIMER1_IRQ || (enabled & (1 << i)) !== 0)) continue;
        await word(NVIC_IPR + 4 * w, (o) => {
          let v = o;
          for (const [b, i] of irqs.entries()) {
            const p = (o >>> (8 * b)) & 0xff;
            if (i === TIMER1_IRQ) v = (v & ~(0xff << (8 * b))) | 0;
            else if ((enabled & (1 << i)) !== 0 && p === 0) v = (v & ~(0xff << (8 * b))) | (DEMOTED << (8 * b));
          }
          return v;
        });
      }
      await word(TIMER1 + Timer.reload, () => ticks);
      await word(TIMER1 + Timer.ctrl, () => 0x9);
      await word(NVIC_ISER0, () => 1 << TIMER1_IRQ);
      return saved;
    },
    async install(access: TargetAccess, saved: SavedState, step: () => Promise<void>): Promise<void> {
      const store = new CoreExecutedStore(access, step, BigInt(area.start + STORE_STUB_AT));
      const state = Buffer.alloc(CODE_AT);
      state.writeUInt32LE(req.text.start >>> 0, S.textBase);
      state.writeUInt32LE(shift, S.shift);
      state.writeUInt32LE(buckets, S.buckets);
      state.writeUInt32LE(0xace1_5eed, S.lfsr);
      state.writeUInt32LE(LFSR_TAPS, S.taps);
      state.writeUInt32LE(ticks - 1, S.mask);
      state.writeUInt32LE(ticks / 2, S.base);
      const code = Buffer.from(HANDLER_HEX, 'hex');
      code.writeUInt32LE(area.start, AREA_LITERAL);
      await access.writeMemory(BigInt(area.start), state);
      await access.writeMemory(BigInt(area.start + CODE_AT), code);
      await access.writeMemory(BigInt(area.start + BUCKETS_AT), Buffer.alloc(4 * (buckets + 1)));
      const from = saved.words.find((w) => w.address === VTOR)!.original;
      const table = await access.readMemory(BigInt(from), 4 * VECTOR_WORDS);
      table.writeUInt32LE((area.start + CODE_AT) | 1, 4 * (16 + TIMER1_IRQ));
      await access.writeMemory(BigInt(vtab), table);
      const check = await access.readMemory(BigInt(area.start + CODE_AT), code.length);
      if (!check.equals(code))
        throw new Error(`the interrupt sampler's handler did not stick at 0x${(area.start + CODE_AT).toString(16)}`);
      await store.store32(TIMER1 + Timer.value, ticks);
      await store.store32(TIMER1 + Timer.intClear, 1);
      for (const w of saved.words) await store.store32(w.address, w.patched);
    },
    async uninstall(access: TargetAccess, saved: SavedState, step: () => Promise<void>): Promise<string[]> {
      const store = new CoreExecutedStore(access, step, BigInt(area.start + STORE_STUB_AT));
      const problems: string[] = [];
      await store.store32(TIMER1 + Timer.ctrl, 0);
      await store.store32(NVIC_ICER0, 1 << TIMER1_IRQ);
      await store.store32(TIMER1 + Timer.intClear, 1);
      await store.store32(NVIC_ICPR0, 1 << TIMER1_IRQ);
      for (const w of [...saved.words].reverse()) {
        if (w.address === NVIC_ISER0) continue; // ICER above: writing ISER's zeros changes nothing
        await store.store32(w.address, w.original);
        const now = await access.readU32(BigInt(w.address));
        if (now !== w.original)
          problems.push(`0x${w.address.toString(16)} reads 0x${now.toString(16)}, not 0x${w.original.toString(16)}`);
      }
      const iser = await access.readU32(BigInt(NVIC_ISER0));
      if ((iser & (1 << TIMER1_IRQ)) !== 0) problems.push('IRQ 9 is still enabled');
      return problems;
    },
  };
}

export const cortexMInterruptSampler: InterruptSamplerArch = {
  needs:
    "a Cortex-M target on QEMU's `mps2-an386` (the sampler's timer is CMSDK timer 1, IRQ 9) and " +
    'at least 32 KiB of reserved RAM',
  plan,
};
