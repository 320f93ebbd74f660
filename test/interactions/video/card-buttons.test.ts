import { describe, expect, it } from 'vitest';
import { cardButtonOf } from '../../../src/interactions/video/card-buttons.ts';
import { videoActionId, type VideoAction } from '../../../src/video/actions.ts';

// What a press of each button under a video meets before its handler runs: the role rules of video or
// only a server, an answer everyone sees, one only its member sees, or a form at once; and whether it
// may be pressed through a member's own install.

const TASK = 'task-1';

function meets(action: VideoAction) {
  const { requires, answers, userInstall } = cardButtonOf(videoActionId(action, TASK));
  return { requires, answers, userInstall };
}

describe('a press of a button under a video', () => {
  it('that makes a video (Regenerate, Vary, Confirm) follows the role rules of video, and its status card is everyone’s', () => {
    for (const action of ['regenerate', 'vary', 'confirm'] as const) {
      expect(meets(action)).toEqual({ requires: { feature: 'video' }, answers: 'public', userInstall: false });
    }
  });

  it('that opens a form (Extend, Edit, Change and regenerate) needs only the server, so the form comes at once', () => {
    for (const action of ['extend', 'edit', 'change'] as const) {
      expect(meets(action)).toEqual({ requires: { inServer: true }, answers: 'form', userInstall: false });
    }
  });

  it('of Cancel needs only the server, and answers its member privately', () => {
    expect(meets('cancel')).toEqual({ requires: { inServer: true }, answers: 'private', userInstall: false });
  });

  it('of Delete and its question needs only the server (not the role rules: its member, or Manage Messages), and answers privately', () => {
    for (const action of ['delete', 'delete-confirm', 'delete-keep'] as const) {
      expect(meets(action)).toEqual({ requires: { inServer: true }, answers: 'private', userInstall: false });
    }
  });

  it('whose id names no button (a form’s, or one it does not know) fails in its handler, with nothing slow before it', () => {
    for (const id of [videoActionId('extend-modal', TASK), 'video:rewind:task-1']) {
      const button = cardButtonOf(id);
      expect({ requires: button.requires, answers: button.answers, userInstall: button.userInstall }).toEqual({
        requires: { inServer: true },
        answers: 'form',
        userInstall: false,
      });
    }
  });
});
