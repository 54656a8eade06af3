/** The layout worker: computeLayout with a cache that lives as long as the worker. */
import { computeLayout, LayoutCache } from "./layout";
import type { FromWorker, ToWorker, WorkerScope } from "./messages";

const cache = new LayoutCache();
// The one cast at the boundary: the worker's global scope, typed by the message unions.
const scope = self as unknown as WorkerScope;

function reply(msg: ToWorker): FromWorker {
  try {
    return { type: "result", id: msg.id, result: computeLayout(msg.request, cache) };
  } catch (err) {
    return { type: "error", id: msg.id, error: String((err as Error)?.stack ?? err) };
  }
}

scope.onmessage = (e) => {
  if (e.data.type === "layout") scope.postMessage(reply(e.data));
};
