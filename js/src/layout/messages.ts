/**
 * The messages between the layout client (main thread) and the layout worker, as
 * discriminated unions on `type`. Both sides import these; nothing else crosses the worker
 * boundary. `id` pairs a reply with its request.
 */
import type { LayoutRequest, LayoutResult } from "./layout";

/** Main thread -> worker: lay out one request. */
export type ToWorker = { type: "layout"; id: number; request: LayoutRequest };

/** Worker -> main thread: the layout, or why it failed (the error's stack, as text). */
export type FromWorker =
  | { type: "result"; id: number; result: LayoutResult }
  | { type: "error"; id: number; error: string };

/** The worker's global scope as the worker entry uses it, typed by these messages. */
export interface WorkerScope {
  onmessage: ((e: MessageEvent<ToWorker>) => void) | null;
  postMessage(message: FromWorker): void;
}

/** A worker as the client uses it, typed by these messages. */
export interface LayoutWorker {
  onmessage: ((e: MessageEvent<FromWorker>) => void) | null;
  onerror: ((e: ErrorEvent) => void) | null;
  postMessage(message: ToWorker): void;
  terminate(): void;
}
