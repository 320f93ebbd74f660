import { describe, expect, it } from 'vitest';
import { EXTENSION_DURATION, GENERATION_DURATION, USD_TICKS } from '../../src/gateway/spec.ts';
import { MAX_VARIANTS } from '../../src/ports/video-defaults.ts';
import { isCountableEstimate } from '../../src/video/plan.ts';
import { DEFAULT_PRICES, estimateVideoUsdTicks, parsePrices, voiceUsdTicksPerSecond, type PriceTable } from '../../src/settings/prices.ts';
import { formatCost } from '../../src/wording/cost.ts';
import { describePrices } from '../../src/interactions/settings-answers.ts';

// The price table estimates are made with: the defaults, a PRICES_FILE over them, and the estimate of
// every mode as a member reads it on a video's first card ("about $0.40").

const MODEL = 'svc-imagine-video';

function table(text: string): PriceTable {
  const parsed = parsePrices(text);
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.prices;
}

function problems(text: string): string[] {
  const parsed = parsePrices(text);
  return parsed.ok ? [] : parsed.problems;
}

/** The estimate as a member reads it. */
function shown(prices: PriceTable, request: Parameters<typeof estimateVideoUsdTicks>[1]): string {
  return formatCost(estimateVideoUsdTicks(prices, request));
}

describe('the default prices', () => {
  it("are the emulator's documented video prices and $0.05 a minute of voice, for any model", () => {
    expect(describePrices(DEFAULT_PRICES)).toEqual([
      'video, any model: $0.05/s at 480p, $0.08/s at 720p, $0.14/s at 1080p',
      'voice, any model: $0.05/min',
    ]);
  });
});

describe('the estimate of every mode', () => {
  it("prices a generation by its length and resolution, the gateway's defaults (8 s, 480p) when unset", () => {
    expect(shown(DEFAULT_PRICES, { model: MODEL, operation: 'generate' })).toBe('$0.40');
    expect(shown(DEFAULT_PRICES, { model: MODEL, operation: 'generate', duration: 15 })).toBe('$0.75');
    expect(shown(DEFAULT_PRICES, { model: MODEL, operation: 'generate', resolution: '720p' })).toBe('$0.64');
    expect(shown(DEFAULT_PRICES, { model: MODEL, operation: 'generate', resolution: '1080p', duration: 5 })).toBe('$0.70');
    expect(shown(DEFAULT_PRICES, { model: MODEL, operation: 'generate', resolution: '480p', duration: 1 })).toBe('$0.05');
    // Whole ticks, so that a budget's "exactly the last cent" is exact.
    expect(estimateVideoUsdTicks(DEFAULT_PRICES, { model: MODEL, operation: 'generate', resolution: '1080p', duration: 5 })).toBe(
      0.7 * USD_TICKS,
    );
  });

  it("prices an edit as 8 s at 720p, whatever the source's length or resolution", () => {
    expect(shown(DEFAULT_PRICES, { model: MODEL, operation: 'edit' })).toBe('$0.64');
    expect(shown(DEFAULT_PRICES, { model: MODEL, operation: 'edit', resolution: '1080p', duration: 3 })).toBe('$0.64');
  });

  it('prices an extension as the seconds it adds at 720p (6 s unless given)', () => {
    expect(shown(DEFAULT_PRICES, { model: MODEL, operation: 'extend' })).toBe('$0.48');
    expect(shown(DEFAULT_PRICES, { model: MODEL, operation: 'extend', duration: 10 })).toBe('$0.80');
    expect(shown(DEFAULT_PRICES, { model: MODEL, operation: 'extend', duration: 2, resolution: '1080p' })).toBe('$0.16');
  });

  it('prices voice per second of session: a minute is the per-minute price', () => {
    expect(voiceUsdTicksPerSecond(DEFAULT_PRICES, 'svc-voice-1') * 60).toBeCloseTo(0.05 * USD_TICKS, 3);
    expect(formatCost(voiceUsdTicksPerSecond(DEFAULT_PRICES, 'svc-voice-1') * 3600)).toBe('$3.00');
    const priced = table('{"voice": {"svc-voice-pro": {"per_minute_usd": 0.3}}}');
    expect(formatCost(voiceUsdTicksPerSecond(priced, 'svc-voice-pro') * 10)).toBe('$0.05');
    expect(formatCost(voiceUsdTicksPerSecond(priced, 'svc-voice-1') * 60)).toBe('$0.05');
  });
});

describe('PRICES_FILE over the defaults', () => {
  it('replaces what it names and keeps the default of what it does not', () => {
    const prices = table('{"video": {"*": {"per_second_usd": {"720p": 0.1}}}}');
    expect(describePrices(prices)).toEqual([
      'video, any model: $0.05/s at 480p, $0.10/s at 720p, $0.14/s at 1080p',
      'voice, any model: $0.05/min',
    ]);
    expect(shown(prices, { model: MODEL, operation: 'edit' })).toBe('$0.80');
    expect(shown(prices, { model: MODEL, operation: 'generate' })).toBe('$0.40');
    expect(describePrices(table('{"voice": {"*": {"per_minute_usd": 0.06}}}'))).toEqual([
      'video, any model: $0.05/s at 480p, $0.08/s at 720p, $0.14/s at 1080p',
      'voice, any model: $0.06/min',
    ]);
    expect(describePrices(table('{}'))).toEqual(describePrices(DEFAULT_PRICES));
  });

  it('prices a model it names by its own prices, every other model by "*"', () => {
    const prices = table('{"video": {"svc-imagine-video-1.5": {"per_second_usd": {"480p": 0.02}}}}');
    expect(shown(prices, { model: 'svc-imagine-video-1.5', operation: 'generate' })).toBe('$0.16');
    expect(shown(prices, { model: MODEL, operation: 'generate' })).toBe('$0.40');
    // The resolutions it leaves out are priced as any model's.
    expect(shown(prices, { model: 'svc-imagine-video-1.5', operation: 'edit' })).toBe('$0.64');
    expect(describePrices(prices)).toContain('video, `svc-imagine-video-1.5`: $0.02/s at 480p, $0.08/s at 720p, $0.14/s at 1080p');
  });

  it('gives a model the resolutions it leaves out at the file\'s "*" prices, wherever "*" is written in the file', () => {
    for (const text of [
      '{"video": {"fast": {"per_second_usd": {"480p": 0.02}}, "*": {"per_second_usd": {"720p": 0.1}}}}',
      '{"video": {"*": {"per_second_usd": {"720p": 0.1}}, "fast": {"per_second_usd": {"480p": 0.02}}}}',
    ]) {
      const prices = table(text);
      expect(shown(prices, { model: 'fast', operation: 'generate' })).toBe('$0.16');
      expect(shown(prices, { model: 'fast', operation: 'edit' })).toBe('$0.80');
    }
  });

  it('takes a model named like a built-in of objects as just a model', () => {
    const prices = table(
      '{"video": {"__proto__": {"per_second_usd": {"480p": 1}}, "toString": {"per_second_usd": {"480p": 2}}},' +
        ' "voice": {"constructor": {"per_minute_usd": 6}}}',
    );
    expect(shown(prices, { model: '__proto__', operation: 'generate' })).toBe('$8.00');
    expect(shown(prices, { model: 'toString', operation: 'generate' })).toBe('$16.00');
    expect(shown(prices, { model: 'constructor', operation: 'generate' })).toBe('$0.40');
    expect(shown(prices, { model: 'hasOwnProperty', operation: 'generate' })).toBe('$0.40');
    expect(formatCost(voiceUsdTicksPerSecond(prices, 'constructor') * 60)).toBe('$6.00');
    expect(formatCost(voiceUsdTicksPerSecond(prices, 'toString') * 60)).toBe('$0.05');
    expect(describePrices(prices)).toEqual([
      'video, any model: $0.05/s at 480p, $0.08/s at 720p, $0.14/s at 1080p',
      'video, `__proto__`: $1.00/s at 480p, $0.08/s at 720p, $0.14/s at 1080p',
      'video, `toString`: $2.00/s at 480p, $0.08/s at 720p, $0.14/s at 1080p',
      'voice, any model: $0.05/min',
      'voice, `constructor`: $6.00/min',
    ]);
    // The defaults are untouched by any of it.
    expect(describePrices(DEFAULT_PRICES)).toHaveLength(2);
  });

  it.each([
    [
      '{"video": {"*": {"per_second_usd": {"720p": "cheap"}}}}',
      'video.*.per_second_usd.720p must be a price in dollars, 0 or more (got "cheap")',
    ],
    [
      '{"video": {"svc-imagine-video": {"per_second_usd": {"1080p": -0.1}}}}',
      'video.svc-imagine-video.per_second_usd.1080p must be a price in dollars, 0 or more (got -0.1)',
    ],
    // JSON's 1e400 is Infinity once read: no price.
    [
      '{"video": {"*": {"per_second_usd": {"480p": 1e400}}}}',
      'video.*.per_second_usd.480p must be a price in dollars, 0 or more (got null)',
    ],
    // A finite price past any provider's gives infinite or absurd estimates: refused, naming the field.
    [
      '{"video": {"*": {"per_second_usd": {"720p": 1e308}}}}',
      'video.*.per_second_usd.720p must be at most 100 dollars a second (got 1e+308)',
    ],
    [
      '{"video": {"*": {"per_second_usd": {"480p": 100.01}}}}',
      'video.*.per_second_usd.480p must be at most 100 dollars a second (got 100.01)',
    ],
    [
      '{"voice": {"gpt-voice": {"per_minute_usd": 1e20}}}',
      'voice.gpt-voice.per_minute_usd must be at most 100 dollars a minute (got 100000000000000000000)',
    ],
    ['{"video": {"*": {"per_second_usd": {"4k": 0.5}}}}', 'video.*.per_second_usd.4k is not a resolution (480p, 720p, 1080p)'],
    [
      '{"video": {"*": {"per_second": {"480p": 0.05}}}}',
      'video.*.per_second_usd must be an object of prices per resolution (480p, 720p, 1080p)',
    ],
    ['{"video": {"*": 0.05}}', 'video.* must be an object'],
    ['{"video": [0.05]}', 'video must be an object keyed by model id (or "*" for any model)'],
    ['{"voice": {"*": {"per_minute_usd": "0.05"}}}', 'voice.*.per_minute_usd must be a price in dollars, 0 or more (got "0.05")'],
    ['{"voice": {"*": {"per_minute": 0.05}}}', 'voice.*.per_minute_usd must be a price in dollars, 0 or more (got nothing)'],
    ['{"audio": {}}', 'audio is not a price section (video, voice)'],
    ['[]', 'it must be a JSON object with "video" and/or "voice"'],
  ])('refuses %s naming the field', (text, problem) => {
    expect(problems(text)).toEqual([problem]);
  });

  it('names every bad field of a file at once, and says when it is not JSON', () => {
    expect(problems('{"video": {"*": {"per_second_usd": {"480p": -1, "720p": "x"}}}, "voice": {"*": {}}}')).toEqual([
      'video.*.per_second_usd.480p must be a price in dollars, 0 or more (got -1)',
      'video.*.per_second_usd.720p must be a price in dollars, 0 or more (got "x")',
      'voice.*.per_minute_usd must be a price in dollars, 0 or more (got nothing)',
    ]);
    expect(problems('{"video": ')).toEqual([expect.stringMatching(/^it is not JSON \(/)]);
  });

  it('accepts the most a price may be, and its estimates are finite cents', () => {
    const prices = table('{"video": {"*": {"per_second_usd": {"1080p": 100}}}, "voice": {"*": {"per_minute_usd": 100}}}');
    const longest = estimateVideoUsdTicks(prices, {
      model: 'any',
      operation: 'generate',
      resolution: '1080p',
      duration: GENERATION_DURATION.max,
    });
    expect(longest).toBe(1500 * USD_TICKS);
    expect(isCountableEstimate(longest * MAX_VARIANTS)).toBe(true);
    expect(
      isCountableEstimate(estimateVideoUsdTicks(prices, { model: 'any', operation: 'extend', duration: EXTENSION_DURATION.max })),
    ).toBe(true);
    // A whole day of voice at the most a minute may cost: $144,000, still whole ticks.
    expect(isCountableEstimate(Math.round(24 * 3600 * voiceUsdTicksPerSecond(prices, 'any')))).toBe(true);
  });

  it('accepts a price of 0: a model the operator does not pay for', () => {
    const prices = table('{"video": {"free-model": {"per_second_usd": {"480p": 0, "720p": 0, "1080p": 0}}}}');
    expect(estimateVideoUsdTicks(prices, { model: 'free-model', operation: 'generate', resolution: '1080p' })).toBe(0);
  });
});
