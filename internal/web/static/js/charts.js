// Charts drawn from a tool's chart_data (make_chart; seed 002), the same
// object live (tool.state's output) and in the history (the tool message's
// tool_agent_output, its _ref already resolved by the server):
// {type: "line"|"bar", title, labels: [..], datasets: [{label, data: [..]}]}.
// The console's own charts (usage.js) may add yFormat (a function that
// writes a y value for the axis) and points: false (no markers).
//
// uPlot draws on a canvas sized to the card (a ResizeObserver follows the
// width), in the page's colours (light or dark). Next to it the same numbers
// are a table, for screen readers and for copying.

import uPlot from '../vendor/uplot@1.6.32/dist/uPlot.esm.js';
import { h } from './dom.js';
import { t } from './i18n.js';

const PALETTE = ['#2b6cd9', '#d9480f', '#2f9e44', '#9c36b5', '#e8590c', '#0c8599'];

// Charts take the page's colours when drawn: when the system switches
// between light and dark, the charts on the page are drawn again.
const redraws = new Set();
window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => {
  for (const redraw of [...redraws]) redraw();
});

/** chartData returns a tool output's chart_data when it is drawable, else null. */
export function chartData(output) {
  const c = output?.chart_data;
  if (!c || typeof c !== 'object' || !Array.isArray(c.datasets) || !c.datasets.length) return null;
  const n = Math.max(...c.datasets.map((d) => (Array.isArray(d?.data) ? d.data.length : 0)));
  if (!n) return null;
  return c;
}

/** chartFailure says why a chart cannot be drawn (a reference the server could not resolve). */
export function chartFailure(output) {
  return output?._error || output?.chart_data?._error || '';
}

/**
 * chartCard returns the element of a chart: a title, the canvas (drawn once
 * the element has a width) and a data table.
 */
export function chartCard(c) {
  const labels = (c.labels?.length ? c.labels : c.datasets[0].data.map((_, i) => String(i + 1))).map(String);
  const n = Math.max(labels.length, ...c.datasets.map((d) => d.data.length));
  const plotBox = h('div', { class: 'chart-plot', role: 'img', 'aria-label': t('chart.label', { title: c.title || t('chart.untitled'), n }) });
  const table = h('table', { class: 'chart-table' },
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, t('chart.point')), c.datasets.map((d) => h('th', { scope: 'col' }, d.label || c.title || '')))),
    h('tbody', {}, Array.from({ length: n }, (_, i) => h('tr', {},
      h('th', { scope: 'row' }, labels[i] ?? String(i + 1)),
      c.datasets.map((d) => h('td', {}, d.data[i] === undefined || d.data[i] === null ? '' : String(d.data[i])))))));
  const el = h('figure', { class: 'chart' },
    h('figcaption', { class: 'chart-title' }, c.title || t('chart.untitled')),
    plotBox,
    h('details', { class: 'chart-data' }, h('summary', {}, t('chart.data')), h('div', { class: 'table-wrap' }, table)));

  let plot = null;
  let lastWidth = 0;
  const redraw = () => {
    if (!el.isConnected) {
      redraws.delete(redraw);
      return;
    }
    plot?.destroy();
    plot = null;
    draw(lastWidth);
  };
  redraws.add(redraw);
  const draw = (width) => {
    lastWidth = width;
    if (width < 50) return;
    const height = Math.round(Math.min(260, Math.max(160, width * 0.45)));
    if (plot) {
      plot.setSize({ width, height });
      return;
    }
    const style = getComputedStyle(el);
    const ink = style.color;
    const grid = style.getPropertyValue('--line').trim() || '#ccc';
    const bars = c.type === 'bar';
    const xs = Array.from({ length: n }, (_, i) => i);
    plot = new uPlot({
      width, height,
      legend: { show: false },
      cursor: { show: true, drag: { x: false, y: false } },
      scales: { x: { time: false, range: (u, min, max) => (bars ? [min - 0.5, max + 0.5] : [min, max]) } },
      axes: [
        { stroke: ink, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid },
          splits: () => thin(xs, width), values: (u, splits) => splits.map((i) => labels[i] ?? '') },
        { stroke: ink, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid },
          // Formatted values may be longer: the axis is as wide as its longest.
          size: typeof c.yFormat === 'function' ? (u, values) => Math.max(50, 18 + 7 * Math.max(0, ...(values ?? []).map((v) => String(v).length))) : 50,
          values: typeof c.yFormat === 'function' ? (u, splits) => splits.map(c.yFormat) : undefined },
      ],
      series: [{}, ...c.datasets.map((d, i) => ({
        label: d.label || c.title || '',
        stroke: PALETTE[i % PALETTE.length],
        width: 2,
        fill: bars ? PALETTE[i % PALETTE.length] : undefined,
        points: { show: c.points !== false && n <= 60, size: 6 },
        paths: bars ? uPlot.paths.bars({ size: [0.6, 60] }) : undefined,
      }))],
    }, [xs, ...c.datasets.map((d) => xs.map((i) => (typeof d.data[i] === 'number' ? d.data[i] : null)))], plotBox);
    el.dispatchEvent(new Event('chart-drawn', { bubbles: true }));
  };
  const ro = new ResizeObserver((entries) => {
    if (!el.isConnected) { // removed (another conversation opened): let it go
      ro.disconnect();
      redraws.delete(redraw);
      plot?.destroy();
      return;
    }
    draw(Math.floor(entries[0].contentRect.width));
  });
  ro.observe(plotBox);
  return el;
}

// thin keeps at most one x label per 60 pixels.
function thin(xs, width) {
  const step = Math.max(1, Math.ceil(xs.length / Math.max(1, Math.floor(width / 60))));
  return xs.filter((i) => i % step === 0);
}
