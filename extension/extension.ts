import * as vscode from 'vscode';
import { MeasurementStore } from '../core/analysis/measurements';
import { registerCounterCommands } from './commands/counterCommands';
import { registerExportCommands } from './commands/exportCommands';
import { registerInjectionCommands } from './commands/injectionCommands';
import { registerProfilingCommands } from './commands/profilingCommands';
import { registerDebugging } from './debug/registration';
import { registerProfilePanels } from './panels/profilePanels';
import { SessionTracker } from './debug/sessionTracker';
import { InjectedMeasurements } from './editor/injectedMeasurements';
import { startProfileLanguageClient } from './lsp/profileLanguageClient';
import { LiveHotspots } from './hotspots/liveHotspots';
import { liveProfileSource, registerLiveHotspots } from './hotspots/registration';
import { CountersView } from './views/countersView';
import { MeasurementsView } from './views/measurementsView';

const sourceFiles: vscode.DocumentSelector = [
  { language: 'c' },
  { language: 'cpp' },
  { language: 'arm' },
  { language: 'asm' },
];

/** Composition root: builds the services and registers them, nothing more. */
export function activate(context: vscode.ExtensionContext): void {
  // One log for what the user may want to read later: profiling runs, measurement notes.
  const log = vscode.window.createOutputChannel('CycleLens', { log: true });
  registerDebugging(context, log);
  const tracker = new SessionTracker();
  const store = new MeasurementStore();
  const counters = new CountersView(tracker);
  const injected = new InjectedMeasurements(tracker, context.extensionUri, log);
  const measurements = new MeasurementsView(store, injected);
  const live = new LiveHotspots();
  context.subscriptions.push(
    log,
    tracker,
    counters,
    injected,
    measurements,
    vscode.window.registerTreeDataProvider('cyclelens.counters', counters),
    vscode.window.registerTreeDataProvider('cyclelens.measurements', measurements),
    vscode.languages.registerCodeLensProvider(sourceFiles, injected),
    vscode.languages.registerHoverProvider(sourceFiles, injected),
    ...registerCounterCommands(tracker, counters, store),
    ...registerInjectionCommands(injected),
    ...registerProfilingCommands(tracker, log, context.extensionUri),
    startProfileLanguageClient(context, log),
    ...registerExportCommands(log),
    ...registerProfilePanels(context, liveProfileSource(live)),
    ...registerLiveHotspots(live),
  );
}

export function deactivate(): void {
  // Everything registered is disposed through context.subscriptions.
}
