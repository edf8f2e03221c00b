import type { CounterValue } from '../../common/counters';
import type { SlotAssignment } from '../../common/dapCustom';
import { CycleLensError, ErrorCode } from '../errors';
import type { CounterEvent, CounterReading, CounterSlotInfo, CounterUnit, CounterUnitInfo } from './counters';

/**
 * All counter units of one target behind one face: discovery at launch, configuration with
 * validation (unknown event, slot out of range, more events than slots), and reads across units.
 */
export class CounterService {
  private infos: CounterUnitInfo[] = [];

  constructor(private readonly units: CounterUnit[]) {}

  /** Probes every unit. A unit that fails to probe is reported absent with the reason, not fatal. */
  async discover(): Promise<CounterUnitInfo[]> {
    this.infos = [];
    for (const u of this.units) {
      try {
        this.infos.push({ ...(await u.discover()), events: u.events() });
      } catch (err) {
        this.infos.push({
          unit: u.unit,
          present: false,
          note: `Probing failed: ${err instanceof Error ? err.message : String(err)}`,
          slots: [],
          resolution: 1,
        });
      }
    }
    return this.infos;
  }

  capabilities(): CounterUnitInfo[] {
    return this.units.map((u, i) => ({
      ...u.info(),
      events: u.events(),
      ...(this.infos[i]?.note && !u.info().note ? { note: this.infos[i]!.note } : {}),
    }));
  }

  events(): Array<CounterEvent & { unit: string }> {
    return this.present().flatMap((u) => u.events().map((e) => ({ ...e, unit: u.unit })));
  }

  /** Programs explicit assignments; each is checked before anything is written. */
  async configure(assignments: SlotAssignment[]): Promise<void> {
    const plan = assignments.map((a) => {
      const unit = this.unitNamed(a.unit);
      const info = unit.info();
      const slot = info.slots.find((s) => s.index === a.slot);
      if (!slot) {
        const valid = info.slots.map((s) => `${s.index} (${s.name})`).join(', ') || 'none';
        throw new CycleLensError(
          ErrorCode.CounterUnavailable,
          `${a.unit} has no counter slot ${a.slot}. Its slots: ${valid}.`,
        );
      }
      if (slot.fixedEvent && slot.fixedEvent !== a.event) {
        throw new CycleLensError(
          ErrorCode.CounterUnavailable,
          `${slot.name} always counts '${slot.fixedEvent}'; choose a programmable slot for '${a.event}'.`,
        );
      }
      if (!slotCanCount(unit, slot, a.event)) {
        throw new CycleLensError(
          ErrorCode.UnknownEvent,
          `${a.unit} cannot count '${a.event}' on ${slot.name}. It counts: ${unit
            .events()
            .map((e) => e.id)
            .join(', ')}.`,
        );
      }
      return { unit, a };
    });
    for (const { unit, a } of plan) await unit.configure(a.slot, a.event);
  }

  /**
   * Assigns events to slots: a fixed-function slot for its own event first, then free programmable
   * slots. More events than slots is an error that says what to do instead.
   */
  planEvents(eventIds: string[]): SlotAssignment[] {
    const taken = new Set<string>();
    const out: SlotAssignment[] = [];
    for (const id of eventIds) {
      const candidates = this.present()
        .flatMap((u) => u.info().slots.map((slot) => ({ unit: u, slot })))
        .filter(({ unit, slot }) => slotCanCount(unit, slot, id));
      if (candidates.length === 0) {
        const known = [...new Set(this.events().map((e) => e.id))];
        throw new CycleLensError(
          ErrorCode.UnknownEvent,
          `Unknown event '${id}'. This target counts: ${known.join(', ') || 'nothing (no counter unit found)'}.`,
        );
      }
      // A fixed-function slot for its own event first, so programmable slots stay free.
      const pick = candidates
        .filter(({ unit, slot }) => !taken.has(`${unit.unit}:${slot.index}`))
        .sort((x, y) => Number(y.slot.fixedEvent === id) - Number(x.slot.fixedEvent === id))[0];
      if (!pick) {
        throw new CycleLensError(
          ErrorCode.TooManyEvents,
          `${eventIds.length} events asked for, but no free counter slot is left for '${id}'. Count ` +
            `fewer events at once, measure in several runs, or use an injected measurement with ` +
            `software accumulation.`,
        );
      }
      taken.add(`${pick.unit.unit}:${pick.slot.index}`);
      out.push({ unit: pick.unit.unit, slot: pick.slot.index, event: id });
    }
    return out;
  }

  async start(): Promise<void> {
    for (const u of this.present()) {
      const configured = u
        .info()
        .slots.filter((s) => s.event !== undefined)
        .map((s) => s.index);
      if (configured.length > 0) await u.start(configured);
    }
  }

  async reset(unitName?: string, slots?: number[]): Promise<void> {
    for (const u of this.present()) {
      if (unitName && u.unit !== unitName) continue;
      await u.reset(slots ?? u.info().slots.map((s) => s.index));
    }
  }

  async read(): Promise<CounterReading[]> {
    const out: CounterReading[] = [];
    for (const u of this.present()) {
      if (u.info().slots.some((s) => s.event !== undefined)) out.push(...(await u.read()));
    }
    return out;
  }

  /** After a reset CycleLens made: each unit restores what the reset cleared. */
  async afterReset(): Promise<void> {
    for (const u of this.present()) await u.afterReset?.();
  }

  async release(): Promise<void> {
    for (const u of this.units) await u.release().catch(() => undefined);
  }

  private present(): CounterUnit[] {
    return this.units.filter((u) => u.info().present);
  }

  private unitNamed(name: string): CounterUnit {
    const u = this.units.find((x) => x.unit === name);
    if (!u)
      throw new CycleLensError(
        ErrorCode.CounterUnavailable,
        `This target has no counter unit '${name}'. It has: ${this.units.map((x) => x.unit).join(', ') || 'none'}.`,
      );
    if (!u.info().present)
      throw new CycleLensError(
        ErrorCode.CounterUnavailable,
        `${name} is not available on this target: ${u.info().note ?? 'not present'}.`,
      );
    return u;
  }
}

function slotCanCount(unit: CounterUnit, slot: CounterSlotInfo, eventId: string): boolean {
  if (unit.canCount) return unit.canCount(slot.index, eventId);
  if (slot.fixedEvent !== undefined) return slot.fixedEvent === eventId;
  return unit.events().some((e) => e.id === eventId);
}

export function toWire(r: CounterReading): CounterValue {
  return {
    unit: r.unit,
    slot: r.slot,
    event: r.event,
    value: r.value.toString(),
    reliable: r.reliable,
    ...(r.note ? { note: r.note } : {}),
  };
}

/** end − start per slot; a slot unreliable at either end is unreliable. */
export function difference(start: CounterReading[], end: CounterReading[]): CounterValue[] {
  return end.map((e) => {
    const s = start.find((x) => x.unit === e.unit && x.slot === e.slot);
    const reliable = e.reliable && (s?.reliable ?? false);
    const note = [s?.note, e.note].filter(Boolean).join('; ') || (s ? undefined : 'not counting at the start');
    return {
      unit: e.unit,
      slot: e.slot,
      event: e.event,
      value: (e.value - (s?.value ?? 0n)).toString(),
      reliable,
      ...(note ? { note } : {}),
    };
  });
}
