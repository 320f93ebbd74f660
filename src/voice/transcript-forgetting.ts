import type { DiscordOutbox } from '../discord/outbox.ts';
import type { Logger } from '../lib/log.ts';
import { notice, type Notice } from '../wording/notice.ts';
import { membersLabel } from './transcript-thread.ts';
import { leftOut, takeLines, type IndexedLine, type TranscriptLines } from './transcript-lines.ts';

// Forgetting a member in the server's transcripts: each of the bot's messages that holds only their words,
// or answers a turn of theirs, is deleted; a member's line they spoke with others is edited to leave them
// out. A turn several members spoke is one transcript of their mixed voices, which cannot be split by
// speaker: its words go, the others still named, the line saying why.

export interface TranscriptForgettingOptions {
  outbox: Pick<DiscordOutbox, 'deleteMessage' | 'editText'>;
  lines: TranscriptLines;
  guildId: string;
  /** A notice in the server's language, which transcripts are posted in. */
  word(told: Notice): string;
  memberName(userId: string): Promise<string | undefined>;
  log: Logger;
}

/** What forgetting did to the transcripts: messages deleted, and shared lines edited to leave the member out. */
export interface TranscriptsForgotten {
  deleted: number;
  edited: number;
}

export async function forgetInTranscripts(userId: string, options: TranscriptForgettingOptions): Promise<TranscriptsForgotten> {
  const { lines, guildId } = options;
  const done: TranscriptsForgotten = { deleted: 0, edited: 0 };
  for (const line of await takeLines(lines, guildId, userId)) {
    const others = line.members.filter((member) => member !== userId);
    if (line.kind === 'turn' && others.length > 0) {
      if (await editLeavingOut(line, others, options)) done.edited++;
      await leftOut(lines, guildId, line, userId);
      // The pieces after the first of a long line held the same words: the edited first says it all.
      done.deleted += await deleteMessages(line.threadId, line.messageIds.slice(1), options);
    } else {
      done.deleted += await deleteMessages(line.threadId, line.messageIds, options);
    }
  }
  return done;
}

/** The shared line's first message, naming only `others`, its words replaced by why they went. */
async function editLeavingOut(line: IndexedLine, others: readonly string[], options: TranscriptForgettingOptions): Promise<boolean> {
  const [first] = line.messageIds;
  if (first === undefined) return false;
  const speaker = await membersLabel(others, (userId) => options.memberName(userId));
  const content = options.word(
    notice('voice.transcript.line', { speaker, text: notice('voice.transcript.forgotten'), answered: line.answered }),
  );
  try {
    await options.outbox.editText(line.threadId, first, content);
    return true;
  } catch (error) {
    options.log.warn('could not edit a transcript line to leave a forgotten member out', { guild: options.guildId, error });
    return false;
  }
}

/** Deletes the messages; how many went (one already gone counts: it is gone). */
async function deleteMessages(threadId: string, messageIds: readonly string[], options: TranscriptForgettingOptions): Promise<number> {
  let deleted = 0;
  for (const messageId of messageIds) {
    try {
      await options.outbox.deleteMessage(threadId, messageId);
      deleted++;
    } catch (error) {
      options.log.warn("could not delete a forgotten member's transcript line", { guild: options.guildId, error });
    }
  }
  return deleted;
}
