import { PNG } from 'pngjs';
import { describe, expect, it } from 'vitest';
import { ENGLISH, resolveLocale, t } from '../../src/i18n/index.ts';
import { renderSpendChart, SPEND_CHART_COLORS, SPEND_CHART_GEOMETRY, type SpendDay } from '../../src/settings/usage-chart.ts';

// What a member sees in the picture, read from its pixels: each day's column is found from the plot area
// the chart sets (SPEND_CHART_GEOMETRY), the way the category axis divides it into equal bands.

const { width, height, gridLeft, gridRight, gridTop, gridBottom } = SPEND_CHART_GEOMETRY;
const PLOT_BOTTOM = height - gridBottom;

interface Rgb {
  r: number;
  g: number;
  b: number;
}

function rgb(hex: string): Rgb {
  const value = Number.parseInt(hex.slice(1), 16);
  return { r: value >> 16, g: (value >> 8) & 0xff, b: value & 0xff };
}

const VIDEO = rgb(SPEND_CHART_COLORS.video);
const VOICE = rgb(SPEND_CHART_COLORS.voice);

function decode(png: Buffer): PNG {
  return PNG.sync.read(png);
}

function isColor(image: PNG, x: number, y: number, color: Rgb): boolean {
  const at = (y * image.width + x) * 4;
  return image.data[at] === color.r && image.data[at + 1] === color.g && image.data[at + 2] === color.b;
}

/** The middle pixel column of a day's band. */
function columnOf(index: number, dayCount: number): number {
  const band = (width - gridLeft - gridRight) / dayCount;
  return Math.floor(gridLeft + (index + 0.5) * band);
}

/** How many pixels of a color stand in a column of the plot area, and the highest one. */
function colorRun(image: PNG, x: number, color: Rgb): { pixels: number; top: number } {
  let pixels = 0;
  let top = Number.POSITIVE_INFINITY;
  for (let y = gridTop; y < PLOT_BOTTOM; y++) {
    if (!isColor(image, x, y, color)) continue;
    pixels++;
    top = Math.min(top, y);
  }
  return { pixels, top };
}

function countInRect(
  image: PNG,
  left: number,
  top: number,
  right: number,
  bottom: number,
  matches: (x: number, y: number) => boolean,
): number {
  let count = 0;
  for (let y = top; y < bottom; y++) for (let x = left; x < right; x++) if (matches(x, y)) count++;
  return count;
}

function isDark(image: PNG, x: number, y: number): boolean {
  const at = (y * image.width + x) * 4;
  return (image.data[at] ?? 255) < 128 && (image.data[at + 1] ?? 255) < 128 && (image.data[at + 2] ?? 255) < 128;
}

/** Ink of the day labels under the plot area, and of the dollar labels left of it. */
function labelInk(image: PNG): { days: number; dollars: number } {
  const dark = (x: number, y: number) => isDark(image, x, y);
  return {
    days: countInRect(image, gridLeft, PLOT_BOTTOM + 4, width - gridRight, height, dark),
    dollars: countInRect(image, 0, gridTop - 8, gridLeft - 4, PLOT_BOTTOM + 8, dark),
  };
}

function lastDays(count: number, spend: (index: number) => { videoUsd: number; voiceUsd: number }): SpendDay[] {
  return Array.from({ length: count }, (_, index) => ({
    day: new Date(Date.UTC(2026, 9, 24 + index)).toISOString().slice(0, 10),
    ...spend(index),
  }));
}

describe('spend chart', () => {
  it('draws a bar in the video color for each day with spend, voice stacked above it, and nothing on days without', () => {
    const spend: Record<number, { videoUsd: number; voiceUsd: number }> = {
      0: { videoUsd: 2, voiceUsd: 0 },
      3: { videoUsd: 1.5, voiceUsd: 0.75 },
      11: { videoUsd: 0, voiceUsd: 1.2 },
      29: { videoUsd: 3.1, voiceUsd: 0.4 },
    };
    const days = lastDays(30, (index) => spend[index] ?? { videoUsd: 0, voiceUsd: 0 });
    const image = decode(renderSpendChart(days, { title: 'Spend per day' }));
    expect([image.width, image.height]).toEqual([width, height]);

    days.forEach((day, index) => {
      const x = columnOf(index, days.length);
      const video = colorRun(image, x, VIDEO);
      const voice = colorRun(image, x, VOICE);
      expect(video.pixels > 0, `video bar on ${day.day}`).toBe(day.videoUsd > 0);
      expect(voice.pixels > 0, `voice bar on ${day.day}`).toBe(day.voiceUsd > 0);
      if (video.pixels > 0 && voice.pixels > 0) expect(voice.top, `voice above video on ${day.day}`).toBeLessThan(video.top);
    });
  });

  it('draws a larger amount as a taller bar, in proportion', () => {
    const days = lastDays(30, (index) => ({ videoUsd: index === 5 ? 1 : index === 20 ? 4 : 0, voiceUsd: 0 }));
    const image = decode(renderSpendChart(days));
    const small = colorRun(image, columnOf(5, days.length), VIDEO).pixels;
    const large = colorRun(image, columnOf(20, days.length), VIDEO).pixels;
    expect(small).toBeGreaterThan(0);
    expect(large).toBeGreaterThan(small);
    // Four times the amount, four times the height, give or take the anti-aliased edge pixel.
    expect(Math.abs(large - 4 * small)).toBeLessThanOrEqual(4);
  });

  it('draws thirty days of zeros with no bar, and still a dollar scale, day labels and a legend', () => {
    const days = lastDays(30, () => ({ videoUsd: 0, voiceUsd: 0 }));
    const image = decode(renderSpendChart(days, { title: 'Spend per day' }));
    expect([image.width, image.height]).toEqual([width, height]);
    const inPlot = (color: Rgb) =>
      countInRect(image, gridLeft, gridTop, width - gridRight, PLOT_BOTTOM, (x, y) => isColor(image, x, y, color));
    expect(inPlot(VIDEO)).toBe(0);
    expect(inPlot(VOICE)).toBe(0);
    const ink = labelInk(image);
    expect(ink.days).toBeGreaterThan(100);
    expect(ink.dollars).toBeGreaterThan(100);
    // The legend still names both colors above the plot.
    const legend = (color: Rgb) => countInRect(image, 0, 0, width, gridTop, (x, y) => isColor(image, x, y, color));
    expect(legend(VIDEO)).toBeGreaterThan(0);
    expect(legend(VOICE)).toBeGreaterThan(0);
  });

  it('writes its labels with the font it brings, machine fonts aside: days below the plot, dollars left of it', () => {
    const image = decode(renderSpendChart(lastDays(30, (index) => ({ videoUsd: index, voiceUsd: 0 }))));
    const ink = labelInk(image);
    expect(ink.days).toBeGreaterThan(100);
    expect(ink.dollars).toBeGreaterThan(100);
  });

  it.each(['fr', 'ja'])("draws the chart in the reader's language (%s), its bars as in English", (code) => {
    const locale = resolveLocale(code, undefined, 'member');
    const days = lastDays(30, (index) => ({ videoUsd: index % 4 === 0 ? 1.5 : 0, voiceUsd: index % 6 === 0 ? 0.5 : 0 }));
    const english = renderSpendChart(days, { title: t(ENGLISH, 'usage.chart.title') });
    const png = renderSpendChart(days, { title: t(locale, 'usage.chart.title'), locale });
    const image = decode(png);
    expect([image.width, image.height]).toEqual([width, height]);
    expect(png.equals(english)).toBe(false);
    days.forEach((day, index) => {
      const x = columnOf(index, days.length);
      expect(colorRun(image, x, VIDEO).pixels > 0, `video bar on ${day.day}`).toBe(day.videoUsd > 0);
      expect(colorRun(image, x, VOICE).pixels > 0, `voice bar on ${day.day}`).toBe(day.voiceUsd > 0);
    });
  });

  it('gives the same bytes for the same days', () => {
    const days = lastDays(30, (index) => ({ videoUsd: (index % 5) * 0.7, voiceUsd: index % 3 === 0 ? 0.25 : 0 }));
    expect(renderSpendChart(days, { title: 'Spend' }).equals(renderSpendChart(days, { title: 'Spend' }))).toBe(true);
  });

  it('refuses an amount it could only misdraw', () => {
    expect(() => renderSpendChart(lastDays(3, () => ({ videoUsd: -1, voiceUsd: 0 })))).toThrow(RangeError);
    expect(() => renderSpendChart(lastDays(3, () => ({ videoUsd: 0, voiceUsd: Number.NaN })))).toThrow(RangeError);
  });
});
