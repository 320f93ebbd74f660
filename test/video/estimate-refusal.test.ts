import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_VENDOR, USD_TICKS, videoModelNames } from '../../src/gateway/spec.ts';
import { silentLogger } from '../../src/lib/log.ts';
import type { LimitQuery } from '../../src/ports/guild-policy.ts';
import type { InteractionContext } from '../../src/ports/interaction-context.ts';
import { openStore, type Store } from '../../src/store/index.ts';
import { EndUserIds } from '../../src/video/end-users.ts';
import { VideoPreparation } from '../../src/video/prepare.ts';
import { TaskRepository } from '../../src/video/repository.ts';
import { ENGLISH, resolveLocale } from '../../src/i18n/index.ts';
import { word } from '../../src/wording/notice.ts';
import { worded } from '../support/worded.ts';
import { openVideoPolicy } from '../support/open-policy.ts';
import { generationInput, memberContext } from '../support/video-request.ts';

// An estimate that is not a whole, finite number of ticks (a price table past its bounds, NaN) refuses the
// job before anything is sent or reserved, saying why: never a budget refusal of "about $∞", never a task
// whose record cannot be stored.

let directory: string;
let store: Store;
let preparation: VideoPreparation;
/** One video's estimate, as the test's price table makes it. */
let estimateUsdTicks = 0;
const limitChecks: LimitQuery[] = [];

const policy = openVideoPolicy({
  checkLimits: (query) => {
    limitChecks.push(query);
    return Promise.resolve({ ok: true });
  },
  estimate: () => estimateUsdTicks,
});

/** The model every video here asks for: the price table's newest. */
const MODEL = videoModelNames().latest;

function context(locale?: string): InteractionContext {
  return memberContext(
    { guildId: 'g1', channelId: 'c1', userId: 'u1' },
    { applicationId: 'a1', interactionToken: 'token', ...(locale === undefined ? {} : { locale }) },
  );
}

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'video-estimate-'));
  store = await openStore(`sqlite://${join(directory, 'bot.sqlite')}`, silentLogger);
  preparation = new VideoPreparation({
    policy,
    repository: new TaskRepository(store, silentLogger),
    endUsers: new EndUserIds(store),
    vendor: DEFAULT_VENDOR,
  });
});

afterAll(async () => {
  await store?.close();
  if (directory) rmSync(directory, { recursive: true, force: true });
});

describe('a video whose estimate is not a countable amount', () => {
  it.each([
    ['Infinity (a price past its bounds)', Infinity],
    ['NaN', Number.NaN],
    ['a fraction of a tick', 0.5],
    ['below zero', -USD_TICKS],
  ])('is refused before its limits are checked when the estimate is %s, saying why', async (_case, usdTicks) => {
    estimateUsdTicks = usdTicks;
    limitChecks.length = 0;
    const prepared = await preparation.generation(context(), generationInput('a lighthouse', { model: MODEL }));
    expect(worded(prepared)).toEqual({
      ok: false,
      message:
        "The bot cannot estimate what a video of `svc-imagine-video-1.5` would cost: its price table gives no usable amount, so nothing was sent or counted. Ask the bot's operator to check its prices (`PRICES_FILE`).",
    });
    expect(limitChecks).toEqual([]);
  });

  it("is refused in words the member's language has", async () => {
    estimateUsdTicks = Infinity;
    const prepared = await preparation.generation(context('fr'), generationInput('un phare', { model: MODEL }));
    expect(prepared.ok || word(resolveLocale('fr', undefined, 'member'), prepared.notice)).toMatch(
      /^Le bot ne peut pas estimer ce que coûterait une vidéo de `svc-imagine-video-1.5`/,
    );
  });

  it('is refused when one video is countable but the whole job of variants is not', async () => {
    estimateUsdTicks = 2 ** 52;
    limitChecks.length = 0;
    const one = await preparation.generation(context(), generationInput('one', { model: MODEL, variants: 1 }));
    expect(one.ok).toBe(true);
    const four = await preparation.generation(context(), generationInput('four', { model: MODEL, variants: 4 }));
    expect(four.ok || word(ENGLISH, four.notice)).toMatch(/^The bot cannot estimate/);
    expect(limitChecks).toHaveLength(1);
  });

  it('goes on to the limits with an ordinary estimate', async () => {
    estimateUsdTicks = Math.round(0.64 * USD_TICKS);
    limitChecks.length = 0;
    const prepared = await preparation.generation(context(), generationInput('a harbour', { model: MODEL, variants: 2 }));
    expect(prepared.ok && prepared.plan.estimateUsdTicks).toBe(estimateUsdTicks);
    expect(limitChecks.map((query) => query.estimateUsdTicks)).toEqual([estimateUsdTicks]);
  });
});
