import { Graphviz } from '@hpcc-js/wasm-graphviz';
import type { LayoutRequest, LayoutResponse } from './layout/workerMessages';

/**
 * Graphviz `dot` compiled to WebAssembly, off the page's thread. The package carries its wasm inside
 * its JavaScript, so nothing is fetched; compiling it needs 'wasm-unsafe-eval' in the CSP (a blob
 * worker inherits the page's policy).
 */
interface WorkerScope {
  onmessage: ((e: MessageEvent<LayoutRequest>) => void) | null;
  postMessage(message: LayoutResponse): void;
}
const scope = self as unknown as WorkerScope;
// Compiled as soon as the worker starts (with the page), not at the first layout: the compile takes
// most of a cold call graph's time, and the page has its data and tables to draw meanwhile.
const graphviz: Promise<Graphviz> = Graphviz.load();
// A failed compile is reported with each layout request; unobserved until then.
graphviz.catch(() => undefined);

scope.onmessage = (e) => {
  const { id, dot } = e.data;
  graphviz
    .then(
      (g) => scope.postMessage({ id, plain: g.layout(dot, 'plain', 'dot') }),
      (err: unknown) => scope.postMessage({ id, error: `Graphviz did not load: ${String(err)}` }),
    )
    .catch((err: unknown) => scope.postMessage({ id, error: `Graphviz could not lay out the graph: ${String(err)}` }));
};
