// A stand-in for the kernel side inside a test page: an anywidget-like model with
// get/set/on/off/save_changes/send, whose `kernel` answers the view's custom messages (stage
// requests, `{type: "stage", request, body}`) as a kernel's custom messages, with canned
// replies in the wire format (binary buffers, never base64).

export class FakeModel {
  /** `kernel(msg)`: a promise of the kernel's answer to a message the view sent,
   * [content, buffers] (emitted as "msg:custom"), or null for none. */
  constructor(state, kernel = null) {
    this.state = { ...state };
    this.handlers = new Map();
    this.saved = 0;
    this.sent = [];
    this.kernel = kernel;
  }
  get(name) {
    return this.state[name];
  }
  set(name, value) {
    this.state[name] = value;
    this.emit(`change:${name}`, value);
  }
  save_changes() {
    this.saved++;
  }
  on(event, cb) {
    if (!this.handlers.has(event)) this.handlers.set(event, new Set());
    this.handlers.get(event).add(cb);
  }
  off(event, cb) {
    if (!event) return this.handlers.clear();
    if (!cb) return this.handlers.delete(event);
    this.handlers.get(event)?.delete(cb);
  }
  emit(event, ...args) {
    for (const cb of [...(this.handlers.get(event) ?? [])]) cb(...args);
  }
  send(msg, _callbacks, buffers = []) {
    this.sent.push({ msg, buffers });
    this.kernel?.(msg).then((answer) => answer && this.emit("msg:custom", ...answer));
  }
  listenerCount() {
    let n = 0;
    for (const set of this.handlers.values()) n += set.size;
    return n;
  }
}

function f64(counts) {
  return new Float64Array(counts).buffer;
}

/** A deterministic activation-like pattern: tiles of rings and stripes. */
function grid(tiles, h, w, seed) {
  const px = new Uint8Array(tiles * h * w);
  for (let t = 0; t < tiles; t++) {
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        const r = Math.hypot(x - w / 2 + t, y - h / 2 - t / 2);
        const v = Math.sin(r / (1.5 + ((t + seed) % 4)) + t) * 0.6 + Math.cos((x + seed) / 3) * 0.4;
        px[t * h * w + y * w + x] = Math.max(0, Math.min(255, Math.round(128 + 120 * v)));
      }
    }
  }
  return px;
}

function attentionMaps(heads, q, k) {
  const a = new Float32Array(heads * q * k);
  for (let hd = 0; hd < heads; hd++) {
    for (let i = 0; i < q; i++) {
      let sum = 0;
      for (let j = 0; j <= i; j++) {
        const v = Math.exp(-Math.abs(i - j - hd) / (1 + hd)) + (j === 0 ? 0.6 : 0);
        a[(hd * q + i) * k + j] = v;
        sum += v;
      }
      for (let j = 0; j <= i; j++) a[(hd * q + i) * k + j] /= sum;
    }
  }
  return a;
}

/** The reply to a `_stage_data` request for a graph, as [message, buffers]. */
export function stageReply(graph, req) {
  const call = graph.calls.find((c) => c.id === req.stage);
  if (!call) return [{ ok: false, stage: req.stage, error: `no stage ${JSON.stringify(req.stage)} in this graph` }, []];
  const shape = call.shapes[0];
  // Run B (compare): the same stage, another pattern; A − B: a signed one, no summaries.
  const shift = req.run === "b" ? 2 : req.run === "diff" ? 5 : 0;
  const hist = [];
  for (let i = 0; i < 32; i++) hist.push(Math.round(1000 * Math.exp(-((i - 14) ** 2) / 40)));
  const summary = {
    leaf: "0", shape, dtype: "float32", device: "cpu", kind: "float", numel: shape.reduce((a, b) => a * b, 1),
    stats: { min: -2.1, max: 3.4, mean: 0.12, std: 0.83, mean_abs: 0.61, zero_fraction: 0.31, nan: 0, posinf: 0, neginf: 0 },
    sampled: null, hist: { lo: -2.1, hi: 3.4, bins: 32, buffer: 0 }, values: null, error: null,
  };
  const buffers = [f64(hist)];
  const spatial = shape.length === 4;
  const views = spatial ? ["grid", "channel", "mean"] : ["matrix"];
  const kind = req.view ?? views[0];
  let view;
  if (kind === "grid") {
    const tiles = Math.min(shape[1], 16);
    view = { kind, shape: [tiles, 16, 16], vmin: -2, vmax: 2, signed: true, axes: ["y", "x"], labels: Array.from({ length: tiles }, (_, i) => `ch ${i}`), channels: Array.from({ length: tiles }, (_, i) => i), buffer: 1 };
    buffers.push(grid(tiles, 16, 16, call.id.length + shift));
  } else if (kind === "channel") {
    const c = req.channel ?? 0;
    view = { kind, shape: [32, 32], vmin: 0, vmax: 3, signed: false, axes: ["y", "x"], labels: [`ch ${c}`], channels: [c], buffer: 1 };
    buffers.push(grid(1, 32, 32, c + shift));
  } else if (kind === "mean") {
    view = { kind, shape: [32, 32], vmin: -1, vmax: 1, signed: true, axes: ["y", "x"], labels: null, channels: null, buffer: 1 };
    buffers.push(grid(1, 32, 32, 7 + shift));
  } else if (kind === "matrix") {
    const t = shape[1] ?? 8, d = Math.min(shape[shape.length - 1] ?? 8, 64);
    view = { kind, shape: [t, d], vmin: -1.5, vmax: 1.5, signed: true, axes: ["token", "feature"], labels: null, channels: null, buffer: 1 };
    buffers.push(grid(1, t, d, 3 + shift));
  } else {
    return [{ ok: false, stage: req.stage, error: `unknown view kind '${kind}' for stage '${req.stage}'` }, []];
  }
  const attention = [];
  let tokens = null;
  if (graph.attention.includes(graph.calls.indexOf(call))) {
    const q = shape[1] ?? 16;
    const heads = 4;
    const maps = attentionMaps(heads, q, q);
    let map;
    if (req.head === null || req.head === undefined) {
      map = new Float32Array(q * q);
      for (let h = 0; h < heads; h++) for (let i = 0; i < q * q; i++) map[i] += maps[h * q * q + i] / heads;
    } else if (req.head >= 0 && req.head < heads) {
      map = maps.slice(req.head * q * q, (req.head + 1) * q * q);
    } else {
      return [{ ok: false, stage: req.stage, error: `head=${req.head} is out of range: this attention call has ${heads} heads (0..${heads - 1})` }, []];
    }
    attention.push({
      heads, q_len: q, k_len: q, pool: [1, 1], source: "sdpa", causal: true, head: req.head ?? null,
      map: { shape: [q, q], buffer: buffers.length }, grid: { shape: [heads, q, q], buffer: buffers.length + 1 },
    });
    buffers.push(map.buffer, maps.buffer);
    tokens = Array.from({ length: q }, (_, i) => (i === 3 ? "<img src=x onerror=alert(1)>" : `tok${i}`));
  }
  if ((graph.nonfinite ?? []).includes(graph.calls.indexOf(call))) {
    // Its output held NaN / Inf: a band of NaN rows, a few +Inf and -Inf pixels in the view.
    const n = view.shape.reduce((a, b) => a * b, 1);
    const marks = new Uint8Array(n);
    const w = view.shape[view.shape.length - 1];
    for (let i = 0; i < n; i++) marks[i] = Math.floor(i / w) % 4 === 0 ? 1 : i % 37 === 5 ? 2 : i % 41 === 7 ? 3 : 0;
    view.nonfinite = buffers.length;
    buffers.push(marks);
    Object.assign(summary.stats, { nan: 96, posinf: 2, neginf: 1 });
  }
  // Buffers arrive as DataViews from a real comm.
  if (req.run === "diff") Object.assign(view, { signed: true, vmin: -0.5, vmax: 0.5 });
  const reply = { ok: true, stage: req.stage, summaries: req.run === "diff" ? [] : [summary], views, view, attention, tokens, error: null };
  if (req.run === "diff") reply.run = "diff";
  return [reply, buffers.map((b) => new DataView(b.buffer ?? b))];
}

/** A FakeModel kernel for a graph: answers each stage request after `delayMs` (its body
 * goes to `log` as `{msg}`); the stages listed in `failing` it never answers, like a busy kernel. */
export function fakeKernel(graph, { failing = [], delayMs = 15, log = [] } = {}) {
  return async (message) => {
    if (message?.type !== "stage") return null;
    log.push({ msg: message.body });
    await new Promise((r) => setTimeout(r, delayMs));
    if (failing.includes(message.body.stage)) return null;
    const [reply, buffers] = stageReply(graph, message.body);
    return [{ type: "stage", request: message.request, reply }, buffers];
  };
}
