/**
 * A test double of `vscode.DebugSession`'s `customRequest` contract: what the extension's generic
 * client relies on and nothing more. It answers with `Thenable`s that are not Promises (VS Code's
 * own answers are `Thenable<any>`), records each request exactly as the client sent it, and
 * answers from a table or fails the way a session whose adapter refused would.
 */
export interface RecordedRequest {
  command: string;
  args: unknown;
  /** Whether the argument was passed at all (VS Code sends no `arguments` when it is not). */
  argsGiven: boolean;
}

/**
 * A `then`-only object, as `Thenable` promises: a client that used `.catch` or `.finally` on it
 * would break here too.
 */
function thenable<T>(settle: () => T): PromiseLike<T> {
  return {
    then<A = T, B = never>(
      onFulfilled?: ((value: T) => A | PromiseLike<A>) | null,
      onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
    ): PromiseLike<A | B> {
      return Promise.resolve().then(settle).then(onFulfilled, onRejected);
    },
  };
}

export class RecordingDebugSession {
  readonly requests: RecordedRequest[] = [];

  constructor(private readonly answers: Record<string, unknown | Error>) {}

  customRequest(command: string, ...rest: unknown[]): PromiseLike<unknown> {
    this.requests.push({ command, args: rest[0], argsGiven: rest.length > 0 && rest[0] !== undefined });
    return thenable(() => {
      if (!(command in this.answers)) throw new Error(`unrecognized request '${command}'`);
      const answer = this.answers[command];
      if (answer instanceof Error) throw answer;
      return answer;
    });
  }
}
