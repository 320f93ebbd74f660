import { USD_TICKS } from '../gateway/spec.ts';
import { ENGLISH, formatUsd, t, type Locale } from '../i18n/index.ts';

// What the gateway charged, and what the bot expects it to, in words for members: dollars as people write them.

/** The smallest amount dollars-and-cents can show. */
const ONE_CENT_USD_TICKS = USD_TICKS / 100;

/** Whether a cost is something, but less than a cent would show: worded as "under $0.01", never as `$0.00`. */
function underACent(usdTicks: number): boolean {
  return usdTicks > 0 && usdTicks < ONE_CENT_USD_TICKS / 2;
}

/** A cost in ticks (1 USD = 10^10) as `$0.42` or `$1,234.50`; a cost under a cent but not nothing as `under $0.01`, never as `$0.00`. */
export function formatCost(usdTicks: number): string {
  return formatCostIn(ENGLISH, usdTicks);
}

/** What the bot expects something to cost, as `about $0.40`: never a bare amount that could pass for what the gateway charged. */
export function formatEstimate(usdTicks: number): string {
  return formatEstimateIn(ENGLISH, usdTicks);
}

/** A cost in a member's or a server's language: `0,42 $`, `moins de 0,01 $US`, `0.01 ドル未満`…; formatCost() is its English. */
export function formatCostIn(locale: Locale, usdTicks: number): string {
  if (underACent(usdTicks)) return t(locale, 'cost.under', { amount: formatUsd(locale, 1 / 100) });
  return formatUsd(locale, usdTicks / USD_TICKS);
}

/** An estimate in a member's or a server's language: `etwa 0,40 $`, `約 $0.40`; formatEstimate() is its English. */
export function formatEstimateIn(locale: Locale, usdTicks: number): string {
  if (underACent(usdTicks)) return formatCostIn(locale, usdTicks);
  return t(locale, 'cost.about', { amount: formatCostIn(locale, usdTicks) });
}
