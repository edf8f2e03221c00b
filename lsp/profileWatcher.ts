import { watch, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import { PROFILE_FOLDERS } from './profileSource';

/**
 * Tells the server when a profile may have changed: fs.watch on the workspace root (for
 * `.cyclelens/` appearing) and on each profile folder, plus `poke()` from the editor's own file
 * events. Events come in bursts (an atomic write is a create, a write and a rename), so they are
 * gathered for a short while and delivered as one.
 */
export class ProfileWatcher {
  private readonly watchers = new Map<string, FSWatcher>();
  private timer: NodeJS.Timeout | undefined;
  private disposed = false;

  constructor(
    private readonly root: string,
    private readonly changed: () => void,
    private readonly settleMs = 150,
  ) {
    this.watchFolders();
  }

  /** Something may have changed: reload after the burst settles. */
  poke(): void {
    if (this.disposed) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      // A folder created since the last look (the first saved result set) is watched from now on.
      this.watchFolders();
      this.changed();
    }, this.settleMs);
  }

  private watchFolders(): void {
    for (const folder of ['', ...PROFILE_FOLDERS]) {
      const path = join(this.root, folder);
      if (this.watchers.has(path)) continue;
      try {
        // In the root only `.cyclelens` itself matters; every other file there is source.
        const w = watch(path, { persistent: false }, (_event, name) => {
          if (folder !== '' || name === null || String(name) === '.cyclelens') this.poke();
        });
        // A watched folder that is removed reports an error: forget it, and look for it again later.
        w.on('error', () => {
          w.close();
          this.watchers.delete(path);
        });
        this.watchers.set(path, w);
      } catch {
        // Not there yet: the root's watcher sees it appear.
      }
    }
  }

  dispose(): void {
    this.disposed = true;
    if (this.timer) clearTimeout(this.timer);
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
  }
}
