/** Stable colours for module types: families by name, a hash for the rest. DOM-free. */

interface Family {
  test: RegExp;
  hue: number;
}

// Families people recognise at a glance; the order decides ties ("ConvTranspose" is conv).
const FAMILIES: Family[] = [
  { test: /attention|attn|mha/i, hue: 350 },
  { test: /conv/i, hue: 212 },
  { test: /linear|dense|proj|lm_?head|classifier/i, hue: 265 },
  { test: /norm/i, hue: 170 },
  { test: /relu|gelu|silu|sigmoid|tanh|softmax|act|swish|mish|elu/i, hue: 32 },
  { test: /pool|upsampl|interpolat|pixelshuffle/i, hue: 130 },
  { test: /embed/i, hue: 300 },
  { test: /dropout/i, hue: 55 },
  { test: /block|layer|stage|encoder|decoder|sequential|modulelist|mlp/i, hue: 195 },
];

function hashHue(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return (h % 36) * 10;
}

/** The hue (degrees) that stands for a module type. */
export function typeHue(type: string): number {
  for (const f of FAMILIES) if (f.test.test(type)) return f.hue;
  return hashHue(type);
}

/** Accent colour of a type (stroke, stripe). */
export function typeColor(type: string): string {
  return `hsl(${typeHue(type)}, 62%, 48%)`;
}
