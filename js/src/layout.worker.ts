/** The layout worker: computeLayout with a cache that lives as long as the worker. */
import { computeLayout, LayoutCache, type LayoutRequest } from "./layout";

const cache = new LayoutCache();
const scope = self as unknown as { onmessage: ((e: MessageEvent) => void) | null; postMessage(m: unknown): void };

scope.onmessage = (e: MessageEvent<{ id: number; request: LayoutRequest }>) => {
  const { id, request } = e.data;
  try {
    scope.postMessage({ id, result: computeLayout(request, cache) });
  } catch (err) {
    scope.postMessage({ id, error: String((err as Error)?.stack ?? err) });
  }
};
