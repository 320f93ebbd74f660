import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveLocale, t } from '../../src/i18n/index.ts';
import { SpendChartDrawer } from '../../src/settings/spend-chart-drawer.ts';
import type { renderSpendChart as RenderSpendChart, SpendDay } from '../../src/settings/usage-chart.ts';

// The drawing thread gives the picture the bot would draw itself, keeps the event loop free while the
// libraries load, and refuses in time, with why, when it cannot draw.

const days: SpendDay[] = [
  { day: '2026-11-20', videoUsd: 1.2, voiceUsd: 0.3 },
  { day: '2026-11-21', videoUsd: 0, voiceUsd: 0 },
  { day: '2026-11-22', videoUsd: 0.4, voiceUsd: 2 },
];

/** In the test's own thread, loaded only once the first test has measured the thread's load. */
async function renderSpendChart(...args: Parameters<typeof RenderSpendChart>): Promise<Buffer> {
  const chart = await import('../../src/settings/usage-chart.ts');
  return chart.renderSpendChart(...args);
}

describe('SpendChartDrawer', () => {
  const drawers: SpendChartDrawer[] = [];
  afterEach(() => drawers.splice(0).forEach((drawer) => drawer.close()));
  function drawer(options?: ConstructorParameters<typeof SpendChartDrawer>[0]): SpendChartDrawer {
    const made = new SpendChartDrawer(options);
    drawers.push(made);
    return made;
  }

  // First in the file: nothing of the chart's libraries is loaded in this process before it.
  it("keeps the event loop answering while the thread loads the chart's libraries", async () => {
    const delay = monitorEventLoopDelay({ resolution: 10 });
    const started = performance.now();
    delay.enable();
    await drawer().draw(days, { locale: resolveLocale('en-US', undefined, 'member') });
    delay.disable();
    const drawingMs = performance.now() - started;
    // Loaded on the event loop, the loop was held for about the whole first chart (1.1-1.8 s); on a thread
    // of its own, it keeps turning, on a busy machine too, and is never held for half of it.
    expect(delay.max / 1e6).toBeLessThan(drawingMs / 2);
  });

  it('draws, in a language, the same picture as drawing in the process', async () => {
    const locale = resolveLocale('de', undefined, 'member');
    const title = t(locale, 'usage.chart.title');
    const png = await drawer().draw(days, { title, locale });
    expect(png.equals(await renderSpendChart(days, { title, locale }))).toBe(true);
  });

  it('answers charts asked for at once, each its own', async () => {
    const charts = drawer();
    const locale = resolveLocale('en-US', undefined, 'member');
    const pictures = await Promise.all(['A', 'B', 'C'].map((title) => charts.draw(days, { title, locale })));
    const expected = await Promise.all(['A', 'B', 'C'].map((title) => renderSpendChart(days, { title, locale })));
    expect(pictures.map((png, index) => png.equals(expected[index]!))).toEqual([true, true, true]);
  });

  it('refuses an amount it cannot draw, with why, and draws the next chart', async () => {
    const charts = drawer();
    const locale = resolveLocale('en-US', undefined, 'member');
    await expect(charts.draw([{ day: '2026-11-20', videoUsd: -1, voiceUsd: 0 }], { locale })).rejects.toThrow(/must be a finite amount/);
    expect((await charts.draw(days, { locale })).equals(await renderSpendChart(days, { locale }))).toBe(true);
  });

  it('refuses when no picture comes by the deadline, and starts a new thread for the next chart', async () => {
    const locale = resolveLocale('en-US', undefined, 'member');
    const hurried = drawer({ deadlineMs: 1, idleMs: 60_000 });
    await expect(hurried.draw(days, { locale })).rejects.toThrow('the chart was not drawn within 1 ms');
    const patient = drawer();
    expect((await patient.draw(days, { locale })).length).toBeGreaterThan(0);
  });
});
