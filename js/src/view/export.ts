/** SVG and PNG files of the laid-out graph (toolbar buttons, the kernel's export request). */
import type { GraphView } from "./graph_view";
import { THEME_VARS } from "./styles";

/** The whole graph as an SVG document, colours resolved from the theme around `themed`. */
export function exportSvg(view: GraphView, themed: Element): string {
  const style = getComputedStyle(themed);
  const vars: Record<string, string> = {};
  for (const name of THEME_VARS) vars[name] = style.getPropertyValue(name).trim();
  return view.exportSvg(vars, vars["--nfw-bg"] || "#ffffff");
}

/** Rasterise SVG text to a PNG at `scale` (capped at 8192 px a side). */
export async function svgToPng(svg: string, scale = 2): Promise<Blob> {
  const url = URL.createObjectURL(new Blob([svg], { type: "image/svg+xml" }));
  try {
    const img = new Image();
    await new Promise<void>((resolve, reject) => {
      img.onload = () => resolve();
      img.onerror = () => reject(new Error("the SVG could not be drawn"));
      img.src = url;
    });
    const k = Math.min(scale, 8192 / Math.max(img.width, img.height, 1));
    const canvas = document.createElement("canvas");
    canvas.width = Math.max(1, Math.round(img.width * k));
    canvas.height = Math.max(1, Math.round(img.height * k));
    canvas.getContext("2d")!.drawImage(img, 0, 0, canvas.width, canvas.height);
    return await new Promise<Blob>((resolve, reject) => canvas.toBlob((b) => (b ? resolve(b) : reject(new Error("PNG encoding failed"))), "image/png"));
  } finally {
    URL.revokeObjectURL(url);
  }
}
