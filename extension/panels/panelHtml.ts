/**
 * The profile panel's page, as a pure function so the Chromium test loads exactly what VS Code gets.
 * The Content Security Policy allows: our script by nonce, WebAssembly compilation for Graphviz
 * ('wasm-unsafe-eval', not 'unsafe-eval'), our stylesheet, a worker started from a blob of our own
 * worker script (webview resources are cross-origin to the page, and `new Worker` wants same
 * origin), and fetching our own resources (that worker script). No inline script or style.
 */
export interface PanelPageResources {
  /** `webview.cspSource`: the origin the webview serves local resources from. */
  cspSource: string;
  nonce: string;
  scriptUri: string;
  workerUri: string;
  styleUri: string;
  title: string;
}

export function panelCsp(r: Pick<PanelPageResources, 'cspSource' | 'nonce'>): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${r.nonce}' 'wasm-unsafe-eval'`,
    `style-src ${r.cspSource}`,
    `img-src ${r.cspSource}`,
    `font-src ${r.cspSource}`,
    `connect-src ${r.cspSource}`,
    'worker-src blob:',
  ].join('; ');
}

const attribute = (s: string): string =>
  s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function panelHtml(r: PanelPageResources): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${attribute(panelCsp(r))}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<meta name="cyclelens-layout-worker" content="${attribute(r.workerUri)}">
<link rel="stylesheet" href="${attribute(r.styleUri)}">
<title>${attribute(r.title)}</title>
</head>
<body>
<div id="app"></div>
<script nonce="${attribute(r.nonce)}" src="${attribute(r.scriptUri)}"></script>
</body>
</html>
`;
}

/** A nonce for one page load: 32 characters from a cryptographic source. */
export function newNonce(random: (n: number) => Uint8Array): string {
  return Buffer.from(random(24)).toString('base64').replace(/[+/=]/g, 'x');
}
