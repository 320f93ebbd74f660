import { createRequire } from 'node:module';
import { Resvg } from '@resvg/resvg-js';
import { BarChart } from 'echarts/charts';
import { GridComponent, LegendComponent, TitleComponent } from 'echarts/components';
import { init, use } from 'echarts/core';
import { SVGRenderer } from 'echarts/renderers';
import { ENGLISH, formatDate, formatNumber, resolveLocale, t, type Locale } from '../i18n/index.ts';
import { isRecord } from '../lib/json.ts';

// A server's spend per day as a PNG that /usage attaches. ECharts lays the chart out and writes it as SVG
// in the process (its server-side rendering, no DOM, no browser); resvg turns the SVG into pixels from a
// prebuilt binary of the npm registry. Both are synchronous, so this is a plain function. Its words (title,
// legend, axis names) come from the catalogs, its days and dollars from Intl, in the reader's language.

export interface SpendDay {
  /** The UTC day, `YYYY-MM-DD`. */
  day: string;
  videoUsd: number;
  voiceUsd: number;
}

export interface SpendChartOptions {
  title?: string;
  /** The reader's language: the legend, the axis names, the days and the dollars. English unless told. */
  locale?: Locale;
}

/**
 * Options that crossed a thread (spend-chart-thread.ts) read back with checks, as everything that crosses
 * a boundary is: the language one the bot speaks, as it was named (it came from one).
 */
export function readSpendChartOptions(value: unknown): SpendChartOptions | undefined {
  if (!isRecord(value)) return undefined;
  const { title, locale } = value;
  if ((title !== undefined && typeof title !== 'string') || (locale !== undefined && typeof locale !== 'string')) return undefined;
  return {
    ...(title === undefined ? {} : { title }),
    ...(locale === undefined ? {} : { locale: resolveLocale(locale, undefined, 'member') }),
  };
}

use([BarChart, GridComponent, LegendComponent, TitleComponent, SVGRenderer]);

/** The chart's size and where its plot area sits, in pixels: tests find each day's column from these. */
export const SPEND_CHART_GEOMETRY = {
  width: 800,
  height: 400,
  gridLeft: 72,
  gridRight: 24,
  gridTop: 64,
  gridBottom: 40,
} as const;

/** Fixed colors, so a member learns them once: video in the blue of /video's status card, voice in an orange far from it. */
export const SPEND_CHART_COLORS = { video: '#5865f2', voice: '#f0a020' } as const;

const BACKGROUND = '#ffffff';
const TEXT_COLOR = '#333333';
/** What the text is drawn in, per language: Roboto has Latin (and Cyrillic, Greek) glyphs, not Japanese ones. */
interface ChartFont {
  family: string;
  files: readonly string[];
  /** The title's weight, among the files' weights. */
  titleWeight: number;
}
/** The fraction of a day's column its bar fills. */
const BAR_WIDTH = '60%';
/** An axis from $0 to $0 draws no scale at all: a server that spent nothing still gets one. */
const EMPTY_AXIS_MAX_USD = 1;

// The slim production image has no fonts, and resvg draws no text without one: the chart brings its own
// TTF from an npm package and loads no system font, so labels look the same on every machine.
const requireFromHere = createRequire(import.meta.url);
const ROBOTO: ChartFont = {
  family: 'Roboto',
  files: [
    requireFromHere.resolve('@expo-google-fonts/roboto/400Regular/Roboto_400Regular.ttf'),
    requireFromHere.resolve('@expo-google-fonts/roboto/500Medium/Roboto_500Medium.ttf'),
  ],
  titleWeight: 500,
};
// Japanese: Noto Sans JP (kana, the kanji in use, and Latin), one weight of about 5.5 MB, read only when a
// chart is drawn in Japanese; the title is drawn in it too, a medium weight would be as large again.
const NOTO_SANS_JP: ChartFont = {
  family: 'Noto Sans JP',
  files: [requireFromHere.resolve('@expo-google-fonts/noto-sans-jp/400Regular/NotoSansJP_400Regular.ttf')],
  titleWeight: 400,
};

/** Every font file a chart may read, whatever its language: the image must keep each of them. */
export const CHART_FONT_FILES: readonly string[] = [...ROBOTO.files, ...NOTO_SANS_JP.files];

function fontFor(locale: Locale): ChartFont {
  return locale.split('-')[0] === 'ja' ? NOTO_SANS_JP : ROBOTO;
}

function checkAmount(day: SpendDay, amount: number, what: string): void {
  // A negative or non-finite amount is a caller's bug; drawn, it would misstate what the server spent.
  if (!Number.isFinite(amount) || amount < 0) throw new RangeError(`${what} spend of ${day.day} must be a finite amount >= 0`);
}

/** No bar element at all where there is no spend, rather than one of height zero. */
function barValue(amount: number): number | null {
  return amount > 0 ? amount : null;
}

/** Below this tallest day the axis steps by fractions of a dollar, so every label shows cents. */
const CENTS_BELOW_USD = 10;

/** The y axis labels, alike along the axis and as the reader writes dollars: `$0.50`, `$1.00`, or `$20`, `1.200 $`. */
function dollarFormat(locale: Locale, tallestUsd: number): (value: number) => string {
  const digits = tallestUsd < CENTS_BELOW_USD ? 2 : 0;
  const options = { style: 'currency', currency: 'USD', minimumFractionDigits: digits, maximumFractionDigits: digits } as const;
  return (value) => formatNumber(locale, value, options);
}

/** `2026-11-22` -> the month and day as the reader writes them (`11/22`, `22.11.`, `22/11`): the year is plain from the title. */
function dayLabel(locale: Locale, day: string): string {
  const date = /^\d{4}-\d{2}-\d{2}$/.test(day) ? Date.parse(`${day}T00:00:00Z`) : Number.NaN;
  return Number.isNaN(date) ? day : formatDate(locale, date, { month: '2-digit', day: '2-digit' });
}

function chartSvg(days: readonly SpendDay[], title: string | undefined, locale: Locale, font: ChartFont): string {
  const { width, height, gridLeft, gridRight, gridTop, gridBottom } = SPEND_CHART_GEOMETRY;
  const tallestUsd = Math.max(0, ...days.map((day) => day.videoUsd + day.voiceUsd));
  const videoName = t(locale, 'usage.chart.video');
  const voiceName = t(locale, 'usage.chart.voice');
  const chart = init(null, null, { renderer: 'svg', ssr: true, width, height });
  try {
    chart.setOption({
      animation: false,
      backgroundColor: BACKGROUND,
      textStyle: { fontFamily: font.family, color: TEXT_COLOR },
      title:
        title === undefined
          ? undefined
          : { text: title, left: gridLeft, top: 12, textStyle: { fontSize: 16, fontWeight: font.titleWeight } },
      legend: { right: gridRight, top: 14, data: [videoName, voiceName], textStyle: { color: TEXT_COLOR } },
      // 'none': the plot area is exactly the rectangle above, whatever the labels' widths.
      grid: { left: gridLeft, right: gridRight, top: gridTop, bottom: gridBottom, outerBoundsMode: 'none' },
      xAxis: {
        type: 'category',
        data: days.map((day) => dayLabel(locale, day.day)),
        axisTick: { alignWithLabel: true },
        axisLabel: { color: TEXT_COLOR },
      },
      yAxis: {
        type: 'value',
        min: 0,
        max: tallestUsd > 0 ? undefined : EMPTY_AXIS_MAX_USD,
        axisLabel: { color: TEXT_COLOR, formatter: dollarFormat(locale, tallestUsd) },
      },
      series: [
        {
          name: videoName,
          type: 'bar',
          stack: 'spend',
          barWidth: BAR_WIDTH,
          itemStyle: { color: SPEND_CHART_COLORS.video },
          data: days.map((day) => barValue(day.videoUsd)),
        },
        {
          name: voiceName,
          type: 'bar',
          stack: 'spend',
          barWidth: BAR_WIDTH,
          itemStyle: { color: SPEND_CHART_COLORS.voice },
          data: days.map((day) => barValue(day.voiceUsd)),
        },
      ],
    });
    return chart.renderToSVGString();
  } finally {
    chart.dispose();
  }
}

/**
 * A PNG of spend per day: one stacked bar per day (video below, voice above), days in the order given, the
 * y axis in dollars. The same input gives the same bytes. Synchronous: ECharts and resvg both are.
 */
export function renderSpendChart(days: readonly SpendDay[], options: SpendChartOptions = {}): Buffer {
  for (const day of days) {
    checkAmount(day, day.videoUsd, 'video');
    checkAmount(day, day.voiceUsd, 'voice');
  }
  const locale = options.locale ?? ENGLISH;
  const font = fontFor(locale);
  const svg = chartSvg(days, options.title, locale, font);
  const resvg = new Resvg(svg, {
    background: BACKGROUND,
    font: { loadSystemFonts: false, fontFiles: [...font.files], defaultFontFamily: font.family, sansSerifFamily: font.family },
  });
  return resvg.render().asPng();
}
