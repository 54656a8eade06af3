/**
 * Data on the graph: each stage's default view as a small picture on its node (the input
 * image, the most active channel of a feature map, a token map, a mask), so the way an image
 * turns into feature maps and back into a mask is visible at once. The pictures are the views
 * the inspector shows, fetched the same way (from the kernel, or what an offline page baked),
 * a few at a time, and kept per stage until the graph changes.
 */
import type { StageRequest, ViewData } from "../wire";
import { lut } from "./colormap";
import type { Thumb } from "./figure";
import { paint, pictureOf, strip } from "./plots";
import type { FetchStage } from "./inspector";

const PARALLEL = 4;

/** One picture of a view: the first tile of a grid (its most active channel), a map, the
 * colours of an image, a vector as a band; null when there is nothing to draw. */
export function thumbnail(view: ViewData): HTMLCanvasElement | null {
  const { shape } = view;
  const picture = pictureOf(view);
  if (picture) return picture;
  const [h, w] = shape.length === 3 ? [shape[1], shape[2]] : shape.length === 2 ? shape : [1, shape[0] ?? 0];
  if (!h || !w) return null;
  const table = lut(view.vmin, view.vmax, view.signed);
  return strip(1, h, w, (img) => paint(view, img, 0, h * w, table));
}

/** Pictures by stage id: asked for when a drawn node has none, drawn when they come; a reply
 * that says why a stage has no data (an offline page that left it out) is kept as those words. */
export class Thumbnails {
  private made = new Map<string, Thumb | null>(); // stage -> data URL or why none (null: none)
  private asked = new Set<string>();
  private queue: string[] = [];
  private running = 0;
  private generation = 0;
  private aborts = new Set<AbortController>();

  constructor(
    private readonly fetchStage: FetchStage,
    private readonly available: (req: StageRequest) => boolean,
    private readonly arrived: (stage: string, thumb: Thumb | null) => void,
  ) {}

  get(stage: string): Thumb | null | undefined {
    return this.made.get(stage);
  }

  /** Ask for the pictures of these stages (those not made or asked for yet). */
  want(stages: Iterable<string>) {
    for (const id of stages) {
      if (this.made.has(id) || this.asked.has(id)) continue;
      const req = request(id);
      if (!this.available(req)) {
        this.made.set(id, null);
        continue;
      }
      this.asked.add(id);
      this.queue.push(id);
    }
    this.pump();
  }

  /** A new run: forget every picture. */
  clear() {
    this.generation++;
    for (const a of this.aborts) a.abort();
    this.aborts.clear();
    this.made.clear();
    this.asked.clear();
    this.queue = [];
    this.running = 0;
  }

  private pump() {
    while (this.running < PARALLEL && this.queue.length) {
      const id = this.queue.shift()!;
      const gen = this.generation;
      const abort = new AbortController();
      this.aborts.add(abort);
      this.running++;
      void this.fetchStage(request(id), abort.signal)
        .then((reply): Thumb | null =>
          reply.ok
            ? reply.view
              ? (thumbnail(reply.view)?.toDataURL("image/png") ?? null)
              : null
            : { missing: reply.error },
        )
        .catch(() => null)
        .then((thumb) => {
          this.aborts.delete(abort);
          if (gen !== this.generation) return;
          this.running--;
          this.made.set(id, thumb);
          this.arrived(id, thumb);
          this.pump();
        });
    }
  }

  dispose() {
    this.clear();
  }
}

function request(stage: string): StageRequest {
  return { stage, view: null, channel: null, head: null, sample: null };
}
