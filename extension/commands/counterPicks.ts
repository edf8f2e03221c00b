import type { CounterEvent, CounterUnitInfo } from '../../common/counters';

/*
 * What "Configure Counters…" offers, and what the Counters view calls an event. Pure (no `vscode`):
 * the rules are unit-tested; counterCommands.ts and countersView.ts apply them.
 */

export type OfferedEvent = CounterEvent & { unit: string };

export interface CounterPickItem {
  /** The event's name ("instructions retired"): the same words the Counters view shows. */
  label: string;
  /** The register(s) that count it ("minstret", "mhpmcounter3 … mhpmcounter18"). */
  description: string;
  detail: string;
  /** The event id to configure. */
  id: string;
}

/** "cycles (QEMU)" → "cycles": a catalogue's qualifier in parentheses does not make another event. */
function baseName(name: string): string {
  return name
    .replace(/\s*\([^)]*\)\s*$/, '')
    .trim()
    .toLowerCase();
}

function registerList(names: string[]): string {
  if (names.length === 0) return '';
  return names.length > 2 ? `${names[0]} … ${names[names.length - 1]}` : names.join(', ');
}

/**
 * One item per event the target can count. Several units may offer the same event id (cycles on
 * DWT and PMU): it is listed once, with every register that counts it. A programmable-counter event
 * that is only another name for what a fixed counter counts (QEMU's mhpmevent selectors 1 and 2 are
 * mcycle's and minstret's events again) is folded into the fixed counter's item: picking either
 * counts the same thing, and the fixed counter leaves the programmable ones free.
 */
export function counterPickItems(
  events: readonly OfferedEvent[],
  units: readonly CounterUnitInfo[],
): CounterPickItem[] {
  const present = units.filter((u) => u.present);
  const fixedRegisters = (id: string): string[] =>
    present.flatMap((u) => u.slots.filter((s) => s.fixedEvent === id).map((s) => s.name));
  const programmable = (unit: string): string[] =>
    present
      .filter((u) => u.unit === unit)
      .flatMap((u) => u.slots.filter((s) => s.fixedEvent === undefined).map((s) => s.name));

  const byId = new Map<string, { event: OfferedEvent; units: string[] }>();
  for (const e of events) {
    const seen = byId.get(e.id);
    if (seen) {
      if (!seen.units.includes(e.unit)) seen.units.push(e.unit);
    } else {
      byId.set(e.id, { event: e, units: [e.unit] });
    }
  }
  const fixed = [...byId.values()].filter((g) => fixedRegisters(g.event.id).length > 0);
  const aliases = new Map<string, string[]>();
  const items: CounterPickItem[] = [];
  for (const g of byId.values()) {
    const same =
      fixedRegisters(g.event.id).length === 0
        ? fixed.find((f) => baseName(f.event.name) === baseName(g.event.name))
        : undefined;
    if (same) {
      const also = aliases.get(same.event.id) ?? [];
      also.push(`${g.event.name} on ${registerList(g.units.flatMap(programmable)) || 'a programmable counter'}`);
      aliases.set(same.event.id, also);
      continue;
    }
    const registers = [
      ...new Set([
        ...fixedRegisters(g.event.id),
        ...(fixedRegisters(g.event.id).length > 0 ? [] : g.units.flatMap(programmable)),
      ]),
    ];
    items.push({
      label: g.event.name,
      description: registerList(registers),
      detail: g.event.description,
      id: g.event.id,
    });
  }
  for (const item of items) {
    const also = aliases.get(item.id);
    if (also) item.detail = `${item.detail} The same event as ${also.join(', ')}: counted on ${item.description}.`;
  }
  return items;
}

/** The name to show for event `id` (the view's description, the pick's label); the id when unknown. */
export function eventName(id: string, events: readonly CounterEvent[]): string {
  return events.find((e) => e.id === id)?.name ?? id;
}
