import * as vscode from 'vscode';
import { registerDebugging } from './debug/registration';

/** Composition root: builds the services and registers them, nothing more. */
export function activate(context: vscode.ExtensionContext): void {
  registerDebugging(context);
}

export function deactivate(): void {
  // Everything registered is disposed through context.subscriptions.
}
