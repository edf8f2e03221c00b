/**
 * Turns a byte-at-a-time stream (a guest UART through QEMU's stdio arrives one character per
 * write) into whole lines for the Debug Console. A partial line is still delivered after `idleMs`
 * so a prompt without a newline shows up.
 */
export class LineCoalescer {
  private pending = '';
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly deliver: (text: string) => void,
    private readonly idleMs = 40,
  ) {}

  push(text: string): void {
    this.pending += text;
    const cut = this.pending.lastIndexOf('\n');
    if (cut >= 0) {
      this.deliver(this.pending.slice(0, cut + 1));
      this.pending = this.pending.slice(cut + 1);
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = this.pending === '' ? undefined : setTimeout(() => this.flush(), this.idleMs);
  }

  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending !== '') this.deliver(this.pending);
    this.pending = '';
  }
}
