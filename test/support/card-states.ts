import type { TaskRecord } from '../../src/video/record.ts';
import { progressBar } from '../../src/video/status-card.ts';
import { shownInCard, taskRecord } from './task-result.ts';

// A job's card in each state it can reach, for tests that check every card the bot can draw: what a
// member should read on it, the gallery items and buttons it should have, and the files it names.

export interface CardState {
  /** What the member should read (each a part of the card's text). */
  text: string[];
  /** The gallery's media urls as the bot sends them. */
  gallery: string[];
  /** The buttons' labels, in order. */
  buttons: string[];
  /** The files uploaded with the card, which `attachment://` urls name. */
  files?: string[];
}

/** The task the states start from: a native text-to-video generation, reserved at $0.40. */
export const CARD_STATES_TASK = taskRecord({ prompt: 'a cat surfing' });
/** When the finished states finished. */
export const CARD_STATES_FINISHED_AT = CARD_STATES_TASK.submittedAt! + 42_000;

/** Each state, named: submitted, running with and without progress, finished with its video or by a link, failed, withheld or refused by moderation, timed out, unknown. */
export function cardStates(): [string, TaskRecord, CardState][] {
  const task = CARD_STATES_TASK;
  const finishedAt = CARD_STATES_FINISHED_AT;
  const reserved: TaskRecord = { ...task, reservation: { estimateUsdTicks: 4_000_000_000, month: false } };
  const succeeded: TaskRecord = {
    ...reserved,
    state: 'succeeded',
    finishedAt,
    outcome: { costUsdTicks: 4_200_000_000, videoUrl: 'http://127.0.0.1:9/files/x.mp4', requestId: 'req-9' },
  };
  const closed = (state: TaskRecord['state'], outcome: TaskRecord['outcome'] = {}): TaskRecord => ({
    ...reserved,
    state,
    finishedAt,
    outcome: { requestId: 'req-9', ...outcome },
    delivery: { ...task.delivery, state: 'closed' },
  });
  const overLimit = "The video is 12.0 MB, over this server's upload limit of 10.0 MB.";
  return [
    [
      'submitted',
      { ...reserved, state: 'submitting', gatewayId: undefined },
      { text: ['Sending to the gateway', 'Estimate: about $0.40'], gallery: [], buttons: [] },
    ],
    ['running with progress', { ...reserved, progress: 30 }, { text: [progressBar(30)], gallery: [], buttons: [] }],
    ['running without progress', reserved, { text: ['**Generating…** started <t:'], gallery: [], buttons: [] }],
    [
      'finished with its video',
      { ...succeeded, delivery: shownInCard({ as: 'file', fileName: 'video-vabc123.mp4' }) },
      {
        text: ['**Done**', 'Cost: $0.42', 'took 42s'],
        gallery: ['attachment://video-vabc123.mp4'],
        buttons: ['Extend', 'Edit', 'Regenerate', 'Change and regenerate', 'Delete'],
        files: ['video-vabc123.mp4'],
      },
    ],
    [
      'finished over the upload limit, shown by a link Discord cannot play (a link button)',
      { ...succeeded, delivery: shownInCard({ as: 'link', reason: overLimit }) },
      {
        text: [overLimit, 'http://127.0.0.1:9/files/x.mp4', 'temporary link'],
        gallery: [],
        buttons: ['Extend', 'Edit', 'Regenerate', 'Change and regenerate', 'Open the video', 'Delete'],
      },
    ],
    [
      'finished over the upload limit, shown by a public https link (in the gallery)',
      {
        ...succeeded,
        outcome: { ...succeeded.outcome, storedFile: { publicUrl: 'https://cdn.example.com/x.mp4' } },
        delivery: shownInCard({ as: 'link', reason: overLimit }),
      },
      {
        text: [overLimit, 'lasting link'],
        gallery: ['https://cdn.example.com/x.mp4'],
        buttons: ['Extend', 'Edit', 'Regenerate', 'Change and regenerate', 'Delete'],
      },
    ],
    [
      'failed',
      closed('failed', { error: { code: 'invalid_argument', message: 'bad prompt.' } }),
      { text: ['**Failed**', 'bad prompt.', 'refunded automatically', 'req-9'], gallery: [], buttons: ['Delete'] },
    ],
    [
      'moderated',
      { ...closed('succeeded', { moderated: true }) },
      {
        text: ['**Withheld by the provider**', "The provider's content moderation withheld the finished video"],
        gallery: [],
        buttons: ['Delete'],
      },
    ],
    [
      'refused by moderation',
      closed('failed', { moderated: true, costUsdTicks: 0, error: { code: 'imagine:content-moderated', message: 'blocked.' } }),
      {
        text: ["**Refused by the provider's moderation**", "The provider's content moderation refused this prompt. Nothing was charged."],
        gallery: [],
        buttons: ['Delete'],
      },
    ],
    ['timed out', closed('timed_out'), { text: ['**Timed out**'], gallery: [], buttons: ['Delete'] }],
    [
      'unknown',
      closed('unknown'),
      { text: ['**Outcome unknown**', 'cannot tell whether the gateway accepted'], gallery: [], buttons: ['Delete'] },
    ],
  ];
}
