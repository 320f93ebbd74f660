import { describe, expect, it } from 'vitest';
import { describeRecentTasks } from '../../src/interactions/video/task-list.ts';
import { ENGLISH, SUPPORTED_LOCALES, t } from '../../src/i18n/index.ts';
import { forgetCard } from '../../src/video/delivery.ts';
import { parseTaskRecord, type TaskRecord } from '../../src/video/record.ts';
import { cardStateKey, renderJobCard, renderStatusCard } from '../../src/video/status-card.ts';
import { deleteCardQuestion } from '../../src/video/wording.ts';
import { cardButtons, cardText, componentsV2Problems } from '../support/cards.ts';
import { shownInCard, taskRecord } from '../support/task-result.ts';

// A finished card's Delete button as the card draws it, and what a task keeps once its card is deleted:
// the task itself, but nothing that edits or links the deleted message.

const MODERATOR = '100000000000000077';
const finishedAt = 1_700_000_060_000;
const shown: TaskRecord = taskRecord({
  state: 'succeeded',
  finishedAt,
  outcome: { costUsdTicks: 4_000_000_000, videoUrl: 'https://v/x.mp4' },
  card: { applicationId: 'app', interactionToken: 'token', tokenExpiresAt: 1_700_000_900_000, messageId: '100000000000000009' },
  delivery: shownInCard({ as: 'file', fileName: 'video-vabc123.mp4' }, { attachmentUrl: 'https://cdn/x.mp4', attachmentId: '5' }),
});

const labels = (task: TaskRecord | TaskRecord[]): string[] =>
  cardButtons(renderJobCard([task].flat(), { now: finishedAt })).map((button) => button.label);

describe('the Delete button', () => {
  it("joins a finished video's row, naming its task", () => {
    expect(labels(shown)).toEqual(['Extend', 'Edit', 'Regenerate', 'Change and regenerate', 'Delete']);
    expect(cardButtons(renderStatusCard(shown)).at(-1)?.customId).toBe('video:delete:vabc123');
  });

  it('is not on a card still running, nor on a job with a variant still to show', () => {
    expect(labels(taskRecord())).toEqual([]);
    const job = (number: number, task: TaskRecord): TaskRecord => ({
      ...task,
      id: `vjob${number}`,
      job: { id: 'vjob1', number, size: 2, taskIds: ['vjob1', 'vjob2'] },
    });
    const fetching = { ...shown, delivery: { state: 'posting', attempts: 1, postingSince: finishedAt } } as const;
    expect(labels([job(1, shown), job(2, fetching)])).not.toContain('Delete');
    expect(labels([job(1, shown), job(2, shown)]).filter((label) => label === 'Delete')).toHaveLength(1);
  });

  it("is not on a member's own install's card, nor in a private view", () => {
    expect(labels({ ...shown, userInstall: {} })).toEqual([]);
    const view = renderStatusCard(shown, { now: finishedAt }, { audience: 'private' });
    expect(cardButtons(view).map((button) => button.label)).not.toContain('Delete');
  });

  it('asks privately before deleting, with a button that deletes and one that keeps, in every language', () => {
    const question = deleteCardQuestion(ENGLISH, 'vabc123');
    expect(question.content).toBe('**Delete this card?** Everyone in the channel loses it and its video; this cannot be undone.');
    expect(JSON.stringify(question.components)).toContain('"custom_id":"video:delete-confirm:vabc123"');
    expect(JSON.stringify(question.components)).toContain('"custom_id":"video:delete-keep:vabc123"');
    for (const key of ['video.delete.question', 'video.delete.confirm', 'video.delete.not-yours', 'video.delete.done'] as const) {
      const texts = SUPPORTED_LOCALES.map((locale) => t(locale, key, { owner: '<@1>' }));
      expect(new Set(texts).size, key).toBe(SUPPORTED_LOCALES.length);
    }
  });
});

describe('a task whose card was deleted', () => {
  const forgotten = forgetCard(shown, MODERATOR, finishedAt + 1_000);

  it('forgets the card: its message id, its token and its post, keeping the task and its outcome', () => {
    expect(forgotten.card.messageId).toBeUndefined();
    expect(forgotten.card.interactionToken).toBe('');
    expect(forgotten.card.tokenExpiresAt).toBe(0);
    expect(forgotten.delivery).toEqual({ state: 'closed', attempts: 1, postingSince: 1_700_000_050_000 });
    expect(forgotten.cardDeleted).toEqual({ by: MODERATOR, at: finishedAt + 1_000 });
    expect(forgotten.outcome).toEqual(shown.outcome);
    expect(forgotten.state).toBe('succeeded');
    // Drawn as it stands: no step edits the deleted card again.
    expect(forgotten.card.renderedState).toBe(cardStateKey(forgotten));
    expect(parseTaskRecord(JSON.parse(JSON.stringify(forgotten)))).toEqual(forgotten);
  });

  it('shows its member privately that it is done and who deleted its card, linking to no message', () => {
    const view = renderStatusCard(forgotten, { now: finishedAt + 2_000 }, { audience: 'private' });
    expect(cardText(view)).toContain('**Done**');
    expect(cardText(view)).not.toContain('could not be shown');
    expect(cardText(view)).toContain(`Its card was deleted by <@${MODERATOR}>.`);
    expect(JSON.stringify(view)).not.toContain('100000000000000009');
    expect(cardButtons(view)).toEqual([]);
    expect(componentsV2Problems(view, [])).toEqual([]);
  });

  it('offers no second Delete, and /video list says its card was deleted', () => {
    expect(labels(forgotten)).toEqual([]);
    const line = describeRecentTasks(ENGLISH, [forgotten]).split('\n')[1];
    expect(line).toMatch(/^`vabc123` · \*\*done\*\* · card deleted · generation/);
    expect(describeRecentTasks(ENGLISH, [shown])).not.toContain('card deleted');
  });
});
