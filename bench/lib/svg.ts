// A small line chart as SVG text (no dependencies, no network): latency (log scale) against offered load.

export interface Series {
  label: string;
  color: string;
  /** SVG stroke-dasharray; undefined = solid. */
  dash?: string;
  points: { x: number; y: number }[];
}

export interface ChartOptions {
  title: string;
  subtitle?: string;
  xLabel: string;
  yLabel: string;
  xTicks: number[];
  /** Horizontal reference lines (targets). */
  marks?: { y: number; label: string; color: string }[];
  width?: number;
  height?: number;
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function lineChartSvg(series: Series[], o: ChartOptions): string {
  const width = o.width ?? 860;
  const height = o.height ?? 520;
  const m = { left: 70, right: 250, top: 64, bottom: 56 };
  const pw = width - m.left - m.right;
  const ph = height - m.top - m.bottom;
  const ys = series.flatMap((s) => s.points.map((p) => p.y)).filter((y) => Number.isFinite(y) && y > 0);
  for (const mark of o.marks ?? []) ys.push(mark.y);
  const yMin = 10 ** Math.floor(Math.log10(Math.max(0.01, Math.min(...ys, 1))));
  const yMax = 10 ** Math.ceil(Math.log10(Math.max(...ys, 10)));
  const xMin = 0;
  const xMax = Math.max(...o.xTicks) * 1.05;
  const X = (x: number) => m.left + ((x - xMin) / (xMax - xMin)) * pw;
  const Y = (y: number) =>
    m.top + ph - ((Math.log10(Math.max(y, yMin)) - Math.log10(yMin)) / (Math.log10(yMax) - Math.log10(yMin))) * ph;
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="${m.left}" y="26" font-size="16" font-weight="bold">${esc(o.title)}</text>`,
  );
  if (o.subtitle) out.push(`<text x="${m.left}" y="46" fill="#555">${esc(o.subtitle)}</text>`);
  // Grid: decades and their 2x / 5x.
  for (let d = yMin; d <= yMax * 1.0001; d *= 10) {
    for (const k of [1, 2, 5]) {
      const v = d * k;
      if (v > yMax * 1.0001) break;
      const y = Y(v);
      out.push(
        `<line x1="${m.left}" x2="${m.left + pw}" y1="${y.toFixed(1)}" y2="${y.toFixed(1)}" stroke="${k === 1 ? '#ccc' : '#eee'}"/>`,
      );
      const label = v >= 1000 ? `${v / 1000} s` : `${v} ms`;
      out.push(`<text x="${m.left - 8}" y="${(y + 4).toFixed(1)}" text-anchor="end" fill="#333">${label}</text>`);
    }
  }
  for (const t of o.xTicks) {
    const x = X(t);
    out.push(`<line x1="${x.toFixed(1)}" x2="${x.toFixed(1)}" y1="${m.top}" y2="${m.top + ph}" stroke="#eee"/>`);
    out.push(`<text x="${x.toFixed(1)}" y="${m.top + ph + 18}" text-anchor="middle" fill="#333">${t}</text>`);
  }
  out.push(
    `<rect x="${m.left}" y="${m.top}" width="${pw}" height="${ph}" fill="none" stroke="#888"/>`,
    `<text x="${m.left + pw / 2}" y="${height - 14}" text-anchor="middle">${esc(o.xLabel)}</text>`,
    `<text transform="translate(18 ${m.top + ph / 2}) rotate(-90)" text-anchor="middle">${esc(o.yLabel)}</text>`,
  );
  for (const mark of o.marks ?? []) {
    const y = Y(mark.y);
    out.push(
      `<line x1="${m.left}" x2="${m.left + pw}" y1="${y.toFixed(1)}" y2="${y.toFixed(1)}" stroke="${mark.color}" stroke-width="1.5" stroke-dasharray="8 4"/>`,
      `<text x="${m.left + 6}" y="${(y - 5).toFixed(1)}" fill="${mark.color}">${esc(mark.label)}</text>`,
    );
  }
  series.forEach((s, i) => {
    const pts = s.points.filter((p) => Number.isFinite(p.y));
    const dash = s.dash ? ` stroke-dasharray="${s.dash}"` : '';
    if (pts.length > 1) {
      const d = pts.map((p, j) => `${j === 0 ? 'M' : 'L'}${X(p.x).toFixed(1)},${Y(p.y).toFixed(1)}`).join(' ');
      out.push(`<path d="${d}" fill="none" stroke="${s.color}" stroke-width="2"${dash}/>`);
    }
    for (const p of pts) {
      out.push(`<circle cx="${X(p.x).toFixed(1)}" cy="${Y(p.y).toFixed(1)}" r="3.5" fill="${s.color}"/>`);
    }
    const ly = m.top + 8 + i * 20;
    const lx = m.left + pw + 16;
    out.push(
      `<line x1="${lx}" x2="${lx + 28}" y1="${ly}" y2="${ly}" stroke="${s.color}" stroke-width="2"${dash}/>`,
      `<circle cx="${lx + 14}" cy="${ly}" r="3.5" fill="${s.color}"/>`,
      `<text x="${lx + 36}" y="${ly + 4}">${esc(s.label)}</text>`,
    );
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
