/**
 * Whether the target runs the user's program, as the session sees it: the one owner of that answer.
 * The debugger knows whether the core runs; only the session knows whose run it is. A run the user
 * asked for (continue, a step) is the user's; the adapter's own work (measurements, descents' runs,
 * resets, restarts) is not, whatever the core does meanwhile; a stop ends the user's run. Samplers
 * count only while the user's program runs, and the halting sampler only in a free run (a halt
 * during a step would end the step).
 */
export type RunPhase = 'halted' | 'running' | 'stepping' | 'ended';

export class RunState {
  private phase: RunPhase = 'halted';
  /** The adapter's own work under way (nested). */
  private own = 0;

  constructor(private readonly coreRuns: () => boolean) {}

  get current(): RunPhase {
    return this.phase;
  }

  /** The core runs the user's program (a continue or a step), and no work of the adapter's is under way. */
  get userProgramRuns(): boolean {
    return (this.phase === 'running' || this.phase === 'stepping') && this.own === 0 && this.coreRuns();
  }

  /** The user's program runs freely (a continue, not a step): halting samples may be taken. */
  get freeRunning(): boolean {
    return this.phase === 'running' && this.userProgramRuns;
  }

  resumed(freely: boolean): void {
    if (this.phase !== 'ended') this.phase = freely ? 'running' : 'stepping';
  }

  stopped(): void {
    if (this.phase !== 'ended') this.phase = 'halted';
  }

  ended(): void {
    this.phase = 'ended';
  }

  /** Runs the adapter's own work: nothing the core runs meanwhile is the user's program. */
  async internally<T>(fn: () => Promise<T>): Promise<T> {
    this.own++;
    try {
      return await fn();
    } finally {
      this.own--;
    }
  }
}
