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
  /** A log scale for x (its ticks all above 0), from a little below the first tick to a little past the last. */
  xLog?: boolean;
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
  const lo = Math.log10(Math.max(Math.min(...o.xTicks), 1e-9)) - 0.15;
  const hi = Math.log10(Math.max(...o.xTicks, 1e-9)) + 0.1;
  const X = o.xLog
    ? (x: number) => m.left + ((Math.log10(Math.max(x, 1e-9)) - lo) / (hi - lo)) * pw
    : (x: number) => m.left + ((x - xMin) / (xMax - xMin)) * pw;
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
    const label = o.xLog ? t.toLocaleString('en') : String(t);
    out.push(`<text x="${x.toFixed(1)}" y="${m.top + ph + 18}" text-anchor="middle" fill="#333">${label}</text>`);
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

/** Round numbers for a linear axis from 0 to at least `max`: about `count` ticks of 1, 2 or 5 times a power of ten. */
export function niceTicks(max: number, count = 5): number[] {
  const top = Math.max(max, 1);
  const raw = top / count;
  const step0 = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((k) => k * step0).find((s) => s >= raw) ?? 10 * step0;
  const ticks: number[] = [];
  for (let v = 0; v < top + step * 0.999; v += step) ticks.push(+v.toPrecision(12));
  return ticks;
}

export interface Panel {
  title: string;
  series: Series[];
  /** Vertical reference lines (the moment the load stopped, say). */
  xMarks?: { x: number; label: string; color: string }[];
}

/**
 * Panels stacked one above the other, each a line chart with linear axes (0 to the largest value), sharing the x
 * axis's range: a quantity over time, one panel per condition and one line per series; lines only, no point markers
 * (a point a second).
 */
export function panelsChartSvg(
  panels: Panel[],
  o: { title: string; subtitle?: string; xLabel: string; yLabel: string; width?: number; panelHeight?: number },
): string {
  const width = o.width ?? 860;
  const panelHeight = o.panelHeight ?? 240;
  const m = { left: 70, right: 200, top: 64, bottom: 44, gap: 56 };
  const pw = width - m.left - m.right;
  const height = m.top + panels.length * (panelHeight + m.gap) - m.gap + m.bottom;
  const xsAll = panels.flatMap((p) => [
    ...p.series.flatMap((s) => s.points.map((q) => q.x)),
    ...(p.xMarks ?? []).map((x) => x.x),
  ]);
  const xTicks = niceTicks(Math.max(1, ...xsAll.filter(Number.isFinite)), 8);
  const xMax = xTicks.at(-1)!;
  const X = (x: number) => m.left + (Math.max(0, x) / xMax) * pw;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="${m.left}" y="26" font-size="16" font-weight="bold">${esc(o.title)}</text>`,
  ];
  if (o.subtitle) out.push(`<text x="${m.left}" y="46" fill="#555">${esc(o.subtitle)}</text>`);
  panels.forEach((panel, k) => {
    const top = m.top + k * (panelHeight + m.gap);
    const ph = panelHeight - 20;
    const py = top + 20;
    const ys = panel.series.flatMap((s) => s.points.map((p) => p.y)).filter(Number.isFinite);
    const yTicks = niceTicks(Math.max(1, ...ys), 5);
    const yMax = yTicks.at(-1)!;
    const Y = (y: number) => py + ph - (Math.max(0, y) / yMax) * ph;
    out.push(`<text x="${m.left}" y="${top + 12}" font-weight="bold">${esc(panel.title)}</text>`);
    for (const t of yTicks) {
      const y = Y(t).toFixed(1);
      out.push(
        `<line x1="${m.left}" x2="${m.left + pw}" y1="${y}" y2="${y}" stroke="#eee"/>`,
        `<text x="${m.left - 8}" y="${(Y(t) + 4).toFixed(1)}" text-anchor="end" fill="#333">${t.toLocaleString('en')}</text>`,
      );
    }
    for (const t of xTicks) {
      const x = X(t).toFixed(1);
      out.push(
        `<line x1="${x}" x2="${x}" y1="${py}" y2="${py + ph}" stroke="#eee"/>`,
        `<text x="${x}" y="${py + ph + 16}" text-anchor="middle" fill="#333">${t}</text>`,
      );
    }
    out.push(
      `<rect x="${m.left}" y="${py}" width="${pw}" height="${ph}" fill="none" stroke="#888"/>`,
      `<text transform="translate(18 ${py + ph / 2}) rotate(-90)" text-anchor="middle">${esc(o.yLabel)}</text>`,
    );
    for (const mark of panel.xMarks ?? []) {
      const x = X(mark.x).toFixed(1);
      out.push(
        `<line x1="${x}" x2="${x}" y1="${py}" y2="${py + ph}" stroke="${mark.color}" stroke-width="1.5" stroke-dasharray="6 4"/>`,
        `<text x="${(X(mark.x) + 4).toFixed(1)}" y="${py + 12}" fill="${mark.color}">${esc(mark.label)}</text>`,
      );
    }
    panel.series.forEach((s, i) => {
      const pts = s.points.filter((p) => Number.isFinite(p.x) && Number.isFinite(p.y) && p.x >= 0);
      const dash = s.dash ? ` stroke-dasharray="${s.dash}"` : '';
      if (pts.length > 1) {
        const d = pts.map((p, j) => `${j === 0 ? 'M' : 'L'}${X(p.x).toFixed(1)},${Y(p.y).toFixed(1)}`).join(' ');
        out.push(`<path d="${d}" fill="none" stroke="${s.color}" stroke-width="1.8"${dash}/>`);
      }
      const ly = py + 8 + i * 20;
      const lx = m.left + pw + 16;
      out.push(
        `<line x1="${lx}" x2="${lx + 28}" y1="${ly}" y2="${ly}" stroke="${s.color}" stroke-width="2"${dash}/>`,
        `<text x="${lx + 36}" y="${ly + 4}">${esc(s.label)}</text>`,
      );
    });
  });
  out.push(`<text x="${m.left + pw / 2}" y="${height - 12}" text-anchor="middle">${esc(o.xLabel)}</text>`, '</svg>');
  return `${out.join('\n')}\n`;
}
