import { describe, expect, it } from 'vitest';
import { AnswerStreams } from '../../src/voice/answer-streams.ts';

// Which playback stream each audio delta belongs to when the server names items, only responses, or
// nothing at all; and the late audio of an answer a barge-in cut off.

describe('answer streams', () => {
  it('keys audio on the item id when the delta names one, and truncates that item', () => {
    const answers = new AnswerStreams();
    answers.responseCreated('resp_1');
    const stream = answers.audio({ responseId: 'resp_1', itemId: 'item_1', contentIndex: 0 });
    expect(stream).toMatchObject({ key: 'item_1', itemId: 'item_1' });
    expect(answers.cutOff('item_1')).toMatchObject({ itemId: 'item_1', contentIndex: 0 });
  });

  it('keys audio without an item id on the response, and truncates the item the response announced', () => {
    const answers = new AnswerStreams();
    answers.responseCreated('resp_1');
    answers.itemAdded('resp_1', 'item_1', 'assistant');
    const stream = answers.audio({ responseId: 'resp_1', itemId: undefined, contentIndex: 1 });
    expect(stream?.key).toBe('resp_1');
    expect(answers.audioDone({ responseId: 'resp_1', itemId: undefined })).toBe('resp_1');
    // The content index of the deltas is carried into the truncation.
    expect(answers.cutOff('resp_1')).toMatchObject({ itemId: 'item_1', contentIndex: 1 });
  });

  it("learns the item from conversation.item.created only when it is the assistant's", () => {
    const answers = new AnswerStreams();
    answers.responseCreated(undefined);
    answers.itemAdded(undefined, 'user_item', 'user');
    answers.itemAdded(undefined, 'unknown_item', undefined);
    const stream = answers.audio({ responseId: undefined, itemId: undefined });
    answers.itemAdded(undefined, 'item_2', 'assistant');
    expect(answers.cutOff(stream!.key)).toMatchObject({ itemId: 'item_2' });
  });

  it('gives audio with no ids at all one synthetic stream per response, which cannot be truncated', () => {
    const answers = new AnswerStreams();
    answers.responseCreated(undefined);
    const first = answers.audio({ responseId: undefined, itemId: undefined });
    expect(answers.audio({ responseId: undefined, itemId: undefined })?.key).toBe(first?.key);
    answers.responseCreated(undefined);
    const second = answers.audio({ responseId: undefined, itemId: undefined });
    expect(second?.key).not.toBe(first?.key);
    expect(answers.cutOff(second!.key)).toMatchObject({ itemId: undefined });
  });

  it('ends every stream of a response at response.done', () => {
    const answers = new AnswerStreams();
    answers.responseCreated('resp_1');
    answers.audio({ responseId: 'resp_1', itemId: 'item_a' });
    answers.audio({ responseId: 'resp_1', itemId: 'item_b' });
    expect(answers.responseDone('resp_1')).toEqual(['item_a', 'item_b']);
  });

  it.each([
    ['item and response ids', { responseId: 'resp_1', itemId: 'item_1' }],
    ['response ids only', { responseId: 'resp_1', itemId: undefined }],
    ['no ids at all', { responseId: undefined, itemId: undefined }],
  ])('drops late audio and done events of a cut-off answer (%s), and plays the next answer', (_label, ids) => {
    const answers = new AnswerStreams();
    answers.responseCreated(ids.responseId);
    const stream = answers.audio(ids)!;
    answers.responseDone(ids.responseId);
    answers.cutOff(stream.key);
    // Still in flight when the barge-in happened, even after response.done:
    expect(answers.audio(ids)).toBeUndefined();
    expect(answers.audioDone(ids)).toBeUndefined();
    expect(answers.isCutOff(ids.responseId, ids.itemId)).toBe(true);
    answers.responseCreated(ids.responseId === undefined ? undefined : 'resp_2');
    const next = answers.audio({
      responseId: ids.responseId === undefined ? undefined : 'resp_2',
      itemId: ids.itemId === undefined ? undefined : 'item_2',
    });
    expect(next).toBeDefined();
    expect(next?.key).not.toBe(stream.key);
  });

  it('starts a new inferred answer after the next user turn when the server never announces responses', () => {
    const answers = new AnswerStreams();
    const first = answers.audio({ responseId: undefined, itemId: undefined })!;
    answers.cutOff(first.key);
    expect(answers.audio({ responseId: undefined, itemId: undefined })).toBeUndefined();
    answers.turnCommitted();
    expect(answers.audio({ responseId: undefined, itemId: undefined })).toBeDefined();
  });
});
