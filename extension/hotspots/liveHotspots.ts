import * as vscode from 'vscode';
import type {
  CountedApart,
  SampleLocation,
  SamplerDescription,
  SamplerId,
  SamplesEventBody,
} from '../../common/dapCustom';
import { addCountedApart, COUNTED_APART, CustomEvents, CustomRequests } from '../../common/dapCustom';
import { customEventBody, customRequest } from '../../common/dapCustomClient';
import { profileFromSamples } from '../../core/profile/fromSamples';
import { LineHeatIndex, type LineHeat, remapSourcePath } from '../../core/profile/lineHeat';
import type { Profile } from '../../core/profile/model';
import { SampleWindow } from '../../core/profile/sampleWindow';
import { formatNumber, formatShare, unitLabel } from '../../core/profile/units';
import { DEBUG_TYPE } from '../debug/sessionTracker';
import { HeatDecorations } from './heatDecorations';

/** At most four repaints a second, whatever the event rate. */
const MIN_UPDATE_INTERVAL_MS = 250;
/** The whole profile (the Hotspots view) is rebuilt at most once a second: it costs more than the heat. */
const MIN_PROFILE_INTERVAL_MS = 1_000;

/** One sampling run of one debug session, as the overlay sees it. */
/** What each kind of read counted apart found, as the status tooltip says it. */
const APART_REASONS: Record<keyof CountedApart, string> = {
  asleepOrHalted: 'asleep or halted (PCSR 0xFFFFFFFF)',
  inExceptionReturn: 'returning from an exception (the PC held an EXC_RETURN token)',
};

export interface LiveRun {
  session: vscode.DebugSession;
  sampler: SamplerDescription | undefined;
  samplerId: SamplerId;
  window: SampleWindow;
  locations: Map<number, SampleLocation>;
  lineIndex: LineHeatIndex;
  profileBuiltAt: number;
  samplesPerSecond: number;
  total: number;
  /** Reads counted apart from code, by reason (asleep or halted, in an exception return); never in `total`. */
  apart: CountedApart;
  running: boolean;
  profile: Profile | undefined;
  /** Local file path (source map applied) → the path as the compiler wrote it, for the files with heat. */
  heatPaths: Map<string, string>;
  /** Whether the counts are exact (no interval on hover). */
  exact: boolean;
}

function windowSetting(): number | undefined {
  const seconds = vscode.workspace.getConfiguration('cyclelens').get<number>('hotspots.windowSeconds', 0);
  return seconds > 0 ? seconds * 1000 : undefined;
}

/**
 * The live hotspot overlay: `cyclelens/samples` events become a profile (core/profile), the profile
 * becomes heat on the visible editors' lines, a status-bar item and the Hotspots view. Updates are
 * throttled and touch visible editors only; the heat stays when the target pauses (a window only
 * slides while samples arrive) and goes when the overlay is toggled off.
 */
export class LiveHotspots implements vscode.Disposable {
  private run: LiveRun | undefined;
  private readonly decorations = new HeatDecorations();
  private readonly status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 40);
  private readonly changed = new vscode.EventEmitter<void>();
  private readonly disposables: vscode.Disposable[] = [];
  private decorated = new Set<vscode.TextEditor>();
  private lastUpdate = 0;
  private pending: NodeJS.Timeout | undefined;
  private profilePending: NodeJS.Timeout | undefined;
  /**
   * The session whose sampling this overlay stopped: its last events (the flush in flight and the
   * final one, which the adapter sends while stopping) must not bring the overlay back.
   */
  private stoppedSession: string | undefined;
  /** Time of the last decoration pass (ms), for the benchmark and the status tooltip. */
  lastPaintMs = 0;

  /** The run changed (new counts, started, stopped): views refresh. */
  readonly onDidChange = this.changed.event;

  constructor() {
    this.status.command = 'cyclelens.toggleHotspots';
    this.disposables.push(
      this.status,
      this.changed,
      this.decorations,
      vscode.debug.onDidReceiveDebugSessionCustomEvent((e) => {
        const samples = customEventBody(e, CustomEvents.samples);
        if (e.session.type === DEBUG_TYPE && samples) this.onSamples(e.session, samples);
      }),
      vscode.debug.onDidTerminateDebugSession((s) => {
        if (this.run?.session.id === s.id) {
          this.run.running = false;
          this.scheduleUpdate();
        }
      }),
      vscode.window.onDidChangeVisibleTextEditors(() => this.scheduleUpdate()),
      // One hover provider instead of a hover text per decorated line: computed for the one line asked.
      vscode.languages.registerHoverProvider(
        { scheme: 'file' },
        { provideHover: (doc, pos) => this.provideHover(doc, pos) },
      ),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('cyclelens.hotspots.windowSeconds') && this.run) {
          this.run.window.setWindow(windowSetting(), Date.now());
          this.scheduleUpdate();
        }
      }),
    );
  }

  get current(): LiveRun | undefined {
    return this.run;
  }

  /** Starts sampling on `session` (the adapter picks the best sampler unless one is named). */
  async start(session: vscode.DebugSession, sampler?: SamplerId): Promise<void> {
    const rate = vscode.workspace.getConfiguration('cyclelens').get<number>('hotspots.rateHz', 0);
    this.stoppedSession = undefined;
    const { sampler: description } = await customRequest(session, CustomRequests.startSampling, {
      ...(sampler ? { sampler } : {}),
      ...(rate > 0 ? { rateHz: rate } : {}),
    });
    this.clearOverlay();
    this.run = this.newRun(session, description.id, description);
    this.run.running = true;
    this.scheduleUpdate();
  }

  /** Stops sampling and removes the heat. */
  async stop(): Promise<void> {
    const run = this.run;
    this.run = undefined;
    this.stoppedSession = run?.session.id;
    this.clearOverlay();
    this.changed.fire();
    this.status.hide();
    if (run?.running) await customRequest(run.session, CustomRequests.stopSampling).catch(() => undefined);
  }

  private newRun(session: vscode.DebugSession, samplerId: SamplerId, sampler: SamplerDescription | undefined): LiveRun {
    return {
      session,
      sampler,
      samplerId,
      window: new SampleWindow(windowSetting()),
      locations: new Map(),
      lineIndex: new LineHeatIndex(),
      profileBuiltAt: 0,
      samplesPerSecond: 0,
      total: 0,
      apart: {},
      running: true,
      profile: undefined,
      heatPaths: new Map(),
      exact: samplerId === 'qemu-plugin' || sampler?.attribution === 'exact-count',
    };
  }

  private onSamples(session: vscode.DebugSession, body: SamplesEventBody): void {
    if (this.stoppedSession === session.id) {
      // A run started elsewhere after ours stopped begins again at seq 0; until then these are
      // the stopped run's last events.
      if (body.seq !== 0 || body.final) return;
      this.stoppedSession = undefined;
    }
    // Sampling started elsewhere (another client, the CLI) still shows once its events arrive.
    if (!this.run || this.run.session.id !== session.id) this.run = this.newRun(session, body.sampler, undefined);
    const run = this.run;
    for (const loc of body.locations) {
      run.locations.set(loc.address, loc);
      run.lineIndex.locate(loc.address, loc);
    }
    if (body.delta.length > 0) run.window.add(Date.now(), body.delta);
    run.samplesPerSecond = body.samplesPerSecond;
    run.total = body.totalSamples;
    addCountedApart(run.apart, body);
    if (body.final) run.running = false;
    this.scheduleUpdate();
  }

  private scheduleUpdate(): void {
    if (this.pending) return;
    const wait = Math.max(0, this.lastUpdate + MIN_UPDATE_INTERVAL_MS - Date.now());
    this.pending = setTimeout(() => {
      this.pending = undefined;
      this.lastUpdate = Date.now();
      this.update();
    }, wait);
  }

  private update(): void {
    const run = this.run;
    if (!run) return;
    const sourceMap = (run.session.configuration as { sourceMap?: Record<string, string> }).sourceMap;
    run.lineIndex.tally(run.window.counts());
    run.heatPaths = new Map([...run.lineIndex.paths].map((path) => [remapSourcePath(path, sourceMap), path]));
    this.paint();
    const now = Date.now();
    if (now - run.profileBuiltAt < MIN_PROFILE_INTERVAL_MS && run.running) {
      // The view catches up at the next second, or at once when sampling ends.
      this.showStatus(run);
      this.profilePending ??= setTimeout(
        () => {
          this.profilePending = undefined;
          this.scheduleUpdate();
        },
        MIN_PROFILE_INTERVAL_MS - (now - run.profileBuiltAt),
      );
      return;
    }
    this.buildProfile(run, now);
    this.showStatus(run);
    this.changed.fire();
  }

  /**
   * The run's profile from the counts as they are now, not as of the last once-a-second rebuild:
   * for a view that opens on it (the panel's first picture matches the status bar's count).
   */
  profileNow(): Profile | undefined {
    const run = this.run;
    if (!run) return undefined;
    this.buildProfile(run, Date.now());
    return run.profile;
  }

  private buildProfile(run: LiveRun, now: number): void {
    const exact = run.exact;
    run.profileBuiltAt = now;
    run.profile = profileFromSamples({
      executable: String(run.session.configuration['executable'] ?? ''),
      sampler: run.samplerId,
      attribution: run.sampler?.attribution ?? (exact ? 'exact-count' : 'translation-block-start'),
      halting: run.sampler?.halting ?? run.samplerId === 'gdb-halting',
      unit: exact ? 'instructions' : 'samples',
      counts: run.window.counts(),
      locations: run.locations,
    });
  }

  private paint(): void {
    const run = this.run;
    if (!run) return;
    const started = performance.now();
    const now = new Set<vscode.TextEditor>();
    for (const editor of vscode.window.visibleTextEditors) {
      const path = run.heatPaths.get(editor.document.uri.fsPath);
      if (path !== undefined) {
        this.decorations.apply(editor, run.lineIndex.levels(path));
        now.add(editor);
      } else if (this.decorated.has(editor)) {
        this.decorations.clear(editor);
      }
    }
    this.decorated = now;
    this.lastPaintMs = performance.now() - started;
  }

  private provideHover(doc: vscode.TextDocument, pos: vscode.Position): vscode.Hover | undefined {
    const run = this.run;
    const path = run?.heatPaths.get(doc.uri.fsPath);
    if (!run || path === undefined) return undefined;
    const heat = run.lineIndex.lineHeat(path, pos.line + 1, !run.exact);
    return heat ? new vscode.Hover(this.hover(run, heat), new vscode.Range(pos.line, 0, pos.line, 0)) : undefined;
  }

  private hover(run: LiveRun, l: LineHeat): vscode.MarkdownString {
    const unit = run.profile ? unitLabel(run.profile.unit) : 'samples';
    const ci =
      l.low !== undefined && l.high !== undefined
        ? ` (95 % interval ${formatShare(l.low)} – ${formatShare(l.high)})`
        : ' (exact)';
    const what = run.sampler ? `${run.sampler.label}: ${run.sampler.attribution}` : run.samplerId;
    return new vscode.MarkdownString(
      `**${formatShare(l.share)}**${ci} · ${formatNumber(l.count)} ${unit}` +
        `${l.function ? ` · \`${l.function}\`` : ''}\n\n${what}`,
    );
  }

  private showStatus(run: LiveRun): void {
    const unit = run.profile ? unitLabel(run.profile.unit) : 'samples';
    const asleep = run.apart.asleepOrHalted
      ? ` · ${formatNumber(run.apart.asleepOrHalted)}` + ' core asleep or halted'
      : '';
    this.status.text =
      `$(flame) ${run.samplerId} · ${formatNumber(run.samplesPerSecond)}/s · ${formatNumber(run.total)} ` +
      `${unit}${asleep}${run.running ? '' : ' (stopped)'}`;
    // A reason the sampler reports at all is noted, at 0 too.
    const apartNotes = COUNTED_APART.filter((key) => run.apart[key] !== undefined)
      .map(
        (key) =>
          ` Reads that found the core ${APART_REASONS[key]} are counted apart, never as code: ` +
          `${formatNumber(run.apart[key]!)} so far.`,
      )
      .join('');
    const samplerNote = run.sampler
      ? `: ${run.sampler.label}, a sample's PC is ${run.sampler.attribution}` +
        `${run.sampler.halting ? ', halts the target per sample' : ''}. Accuracy: ${run.sampler.accuracy}`
      : '';
    this.status.tooltip = `Live hotspots${samplerNote}.${apartNotes} Click to turn off.`;
    this.status.show();
  }

  private clearOverlay(): void {
    for (const editor of this.decorated) this.decorations.clear(editor);
    this.decorated.clear();
  }

  dispose(): void {
    clearTimeout(this.pending);
    clearTimeout(this.profilePending);
    for (const d of this.disposables) d.dispose();
  }
}
