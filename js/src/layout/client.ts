/**
 * Runs layouts in a Web Worker made from a Blob URL (anywidget loads the bundle from a blob,
 * so relative worker URLs cannot resolve; build.mjs inlines the worker bundle as text).
 * Falls back to the main thread where workers are not allowed.
 */
import workerSource from "virtual:layout-worker";
import { computeLayout, LayoutCache, type LayoutRequest, type LayoutResult } from "./layout";
import type { FromWorker, LayoutWorker } from "./messages";

export class LayoutClient {
  private worker: LayoutWorker | null = null;
  private url: string | null = null;
  private pending = new Map<number, { resolve: (r: LayoutResult) => void; reject: (e: Error) => void }>();
  private next = 0;
  private fallback: LayoutCache | null = null;

  constructor(useWorker = true) {
    if (!useWorker || !workerSource || typeof Worker === "undefined") return;
    try {
      this.url = URL.createObjectURL(new Blob([workerSource], { type: "text/javascript" }));
      const worker: LayoutWorker = new Worker(this.url);
      this.worker = worker;
      worker.onmessage = (e) => this.settle(e.data);
      worker.onerror = (e) => {
        e.preventDefault?.();
        this.toMainThread(new Error(`layout worker failed: ${e.message}`));
      };
    } catch {
      this.toMainThread(null);
    }
  }

  private settle(msg: FromWorker) {
    const p = this.pending.get(msg.id);
    if (!p) return;
    this.pending.delete(msg.id);
    if (msg.type === "result") p.resolve(msg.result);
    else p.reject(new Error(`layout failed: ${msg.error}`));
  }

  get inWorker(): boolean {
    return this.worker !== null;
  }

  /** A worker that cannot start (e.g. a strict CSP) hands its pending requests to the main thread. */
  private toMainThread(err: Error | null) {
    this.worker?.terminate();
    this.worker = null;
    if (this.url) URL.revokeObjectURL(this.url);
    this.url = null;
    if (err) console.warn("[neural_flow_widget] layout runs on the main thread:", err.message);
    for (const p of this.pending.values()) p.reject(new Error("retry"));
    this.pending.clear();
  }

  layout(request: LayoutRequest): Promise<LayoutResult> {
    if (!this.worker) {
      this.fallback ??= new LayoutCache();
      try {
        return Promise.resolve(computeLayout(request, this.fallback));
      } catch (e) {
        return Promise.reject(e);
      }
    }
    const id = ++this.next;
    return new Promise<LayoutResult>((resolve, reject) => {
      this.pending.set(id, {
        resolve,
        reject: (e) => (e.message === "retry" ? this.layout(request).then(resolve, reject) : reject(e)),
      });
      this.worker!.postMessage({ type: "layout", id, request });
    });
  }

  dispose() {
    this.worker?.terminate();
    this.worker = null;
    if (this.url) URL.revokeObjectURL(this.url);
    this.url = null;
    this.pending.clear();
  }
}
