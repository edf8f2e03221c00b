/** Between the panel script and its layout worker (both inside webview/). */
export interface LayoutRequest {
  id: number;
  dot: string;
}

export type LayoutResponse = { id: number; plain: string } | { id: number; error: string };
