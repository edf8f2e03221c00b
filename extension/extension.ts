import * as vscode from 'vscode';
import { MeasurementStore } from './analysis/measurements';
import { registerCounterCommands } from './commands/counterCommands';
import { registerDebugging } from './debug/registration';
import { SessionTracker } from './debug/sessionTracker';
import { CountersView } from './views/countersView';
import { MeasurementsView } from './views/measurementsView';

/** Composition root: builds the services and registers them, nothing more. */
export function activate(context: vscode.ExtensionContext): void {
  registerDebugging(context);
  const tracker = new SessionTracker();
  const store = new MeasurementStore();
  const counters = new CountersView(tracker);
  const measurements = new MeasurementsView(store);
  context.subscriptions.push(
    tracker,
    counters,
    measurements,
    vscode.window.registerTreeDataProvider('cyclelens.counters', counters),
    vscode.window.registerTreeDataProvider('cyclelens.measurements', measurements),
    ...registerCounterCommands(tracker, counters, store),
  );
}

export function deactivate(): void {
  // Everything registered is disposed through context.subscriptions.
}
