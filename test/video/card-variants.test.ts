import { describe, expect, it } from 'vitest';
import { brokenLimit } from '../../src/discord/message-limits.ts';
import { SUPPORTED_LOCALES } from '../../src/i18n/index.ts';
import type { TaskRecord } from '../../src/video/record.ts';
import { renderJobCard } from '../../src/video/status-card.ts';
import { allComponents, cardButtons, cardText, componentsV2Problems, galleryItems } from '../support/cards.ts';
import { cardStates } from '../support/card-states.ts';

// A job of variants on one card: every mix of its tiles' states stays within Discord's Components V2
// rules (40 components, 4000 characters), numbered 1..N with each variant's buttons.

const IDS = ['vjob1', 'vjob2', 'vjob3', 'vjob4'];

function variant(state: TaskRecord, index: number, size: number, unsent?: { count: number; reason: string }): TaskRecord {
  const id = IDS[index]!;
  const { delivery } = state;
  return {
    ...state,
    id,
    job: { id: IDS[0]!, number: index + 1, size, taskIds: IDS.slice(0, size), ...(unsent ? { unsent } : {}) },
    delivery:
      delivery.state === 'posted' && delivery.video.as === 'file'
        ? { ...delivery, video: { as: 'file', fileName: `video-${id}.mp4` } }
        : delivery,
  };
}

describe('a job card of variants', () => {
  const states = cardStates();

  it.each([1, 2, 3, 4])('with %i variants, in every state, passes the Components V2 rules', (size) => {
    for (const [name, state] of states) {
      // Each tile in a different state, the long prompt of a member who wrote a lot.
      const tasks = Array.from({ length: size }, (_, index) =>
        variant(
          { ...states[(states.findIndex(([other]) => other === name) + index) % states.length]![1], prompt: 'x'.repeat(4000) },
          index,
          size,
        ),
      );
      const card = renderJobCard(tasks, { now: state.createdAt + 60_000 });
      const files = tasks.flatMap(({ delivery }) =>
        delivery.state === 'posted' && delivery.video.as === 'file' ? [delivery.video.fileName] : [],
      );
      expect(componentsV2Problems(card, files), `${size} variants from "${name}"`).toEqual([]);
      expect(allComponents(card.components).length).toBeLessThanOrEqual(40);
    }
  });

  it('shows four finished variants side by side, numbered, each with its own buttons and task id, and one Delete for the card', () => {
    const done = states.find(([name]) => name === 'finished with its video')![1];
    const tasks = [0, 1, 2, 3].map((index) => variant(done, index, 4));
    const card = renderJobCard(tasks, { now: done.createdAt + 60_000 });
    expect(galleryItems(card)).toEqual(IDS.map((id) => `attachment://video-${id}.mp4`));
    expect(cardButtons(card).map((button) => button.label)).toEqual(
      [1, 2, 3, 4]
        .flatMap((number) => [
          `Extend ${number}`,
          `Edit ${number}`,
          `Regenerate ${number}`,
          `Change and regenerate ${number}`,
          `Vary ${number}`,
        ])
        .concat('Delete'),
    );
    // Delete is the whole card's: a row of its own under the variants' rows, naming the job's first task.
    const rows = allComponents(card.components).filter((component) => component.type === 1);
    expect(rows.at(-1)?.components).toEqual([expect.objectContaining({ label: 'Delete', custom_id: 'video:delete:vjob1' })]);
    expect(cardButtons(card).find((button) => button.label === 'Vary 3')?.customId).toBe('video:vary:vjob3');
    for (const [index, id] of IDS.entries())
      expect(cardText(card)).toMatch(new RegExp(`\\*\\*${index + 1}\\*\\* · [^\\n]*\\n(?:.*\\n)*?-# ref ${id}`));
  });

  it('shows variants over the upload limit by their links: a public https one in the gallery, another in its tile', () => {
    const byName = (name: string) => states.find(([other]) => other.startsWith(name))![1];
    const lasting = byName('finished over the upload limit, shown by a public https link');
    const temporary = byName('finished over the upload limit, shown by a link Discord cannot play');
    const tasks = [variant(lasting, 0, 2), variant(temporary, 1, 2)];
    const card = renderJobCard(tasks, { now: lasting.createdAt + 60_000 });
    expect(galleryItems(card)).toEqual(['https://cdn.example.com/x.mp4']);
    expect(cardText(card)).toMatch(/\*\*2\*\* · [^\n]*\n(?:.*\n)*?.*http:\/\/127\.0\.0\.1:9\/files\/x\.mp4/);
    expect(componentsV2Problems(card, [])).toEqual([]);
  });

  it('says how many variants were sent and why the rest were not', () => {
    const running = states.find(([name]) => name === 'running without progress')![1];
    const unsent = { count: 1, reason: 'You reached the limit of 2 videos a day.' };
    const card = renderJobCard([variant(running, 0, 2, unsent), variant(running, 1, 2, unsent)], { now: running.createdAt });
    expect(cardText(card)).toContain('**2 of 3 variants sent.** You reached the limit of 2 videos a day.');
  });
});

describe('a job card at its worst, in every language', () => {
  // What grows with data on a card, at its largest: a 2,000-character prompt of emoji that are several code
  // points each, the gateway's error message and code as long as it likes, a Vary note, a job of four.
  const EMOJI_PROMPT = '👩🏽‍🚀'.repeat(2000 / '👩🏽‍🚀'.length);
  const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

  it.each(SUPPORTED_LOCALES)('fits Discord and cuts only between whole characters in %s', (locale) => {
    for (const [name, state] of cardStates()) {
      for (const size of [1, 4]) {
        const worst: TaskRecord = {
          ...state,
          locale,
          prompt: EMOJI_PROMPT,
          varyNote: { reason: 'not-decoded' },
          ...(state.outcome.error ? { outcome: { ...state.outcome, error: { code: 'x'.repeat(500), message: '🦊'.repeat(2000) } } } : {}),
        };
        const tasks = Array.from({ length: size }, (_, index) =>
          variant(worst, index, size, size > 1 ? { count: 1, reason: '🦊'.repeat(3000) } : undefined),
        );
        const card = renderJobCard(tasks, { now: state.createdAt + 60_000 });
        const files = tasks.flatMap(({ delivery }) =>
          delivery.state === 'posted' && delivery.video.as === 'file' ? [delivery.video.fileName] : [],
        );
        expect(componentsV2Problems(card, files), `${name}, ${size} in ${locale}`).toEqual([]);
        expect(brokenLimit({ card: card.components }, 0), `${name}, ${size} in ${locale}`).toBeUndefined();
        expect(cardText(card), `${name}, ${size} in ${locale}`).not.toMatch(loneSurrogate);
      }
    }
  });
});
