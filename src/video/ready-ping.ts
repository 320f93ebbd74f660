import { DISCORD_ERRORS, isDiscordError, type DiscordOutbox } from '../discord/outbox.ts';
import type { Logger } from '../lib/log.ts';
import type { VideoDefaults } from '../ports/video-defaults.ts';
import { parseMarker, type Collection, type Store } from '../store/index.ts';
import { notice, word, type Notice } from '../wording/notice.ts';
import { deliveryPending, type TaskRecord } from './record.ts';
import { inCardWords } from './status-card.ts';
import { membersLanguage } from './wording.ts';

// Editing a card notifies nobody: when a job ends (its videos shown, or none could be made), its member
// hears of it in one short new message that mentions them alone, replying to the card, in the server's
// language; a job of a member's own install tells them in their DMs. One message per job, however many
// variants: the last of its tasks to end sends it.
//
// At most once: the job is claimed in the store (`setIfAbsent`, one step for every worker) before the
// message goes out. A worker that dies between the claim and the post leaves the member unpinged, which
// errs on the side of never pinging twice; one that dies after the post finds the claim at its next start
// and sends nothing more. The task keeps `ping: 'due'` (record.ts) until then, so a restart between
// showing the video and the claim still pings.

/** How long a job's claim is kept: far past any restart, or a task's last retry, that could look at it again. */
const CLAIM_KEPT_MS = 30 * 24 * 3600_000;

/** What a job's ping needs of the video part's neighbours. */
export interface ReadyPingDeps {
  store: Store;
  outbox: Pick<DiscordOutbox, 'pingMember' | 'openDm'>;
  /** The server's video defaults (`ping`: whether its members are pinged). */
  defaults(guildId: string): Promise<VideoDefaults>;
  log: Logger;
}

export class ReadyPings {
  readonly #deps: ReadyPingDeps;
  /** The jobs whose ping was claimed, by job id. */
  readonly #claimed: Collection<true>;

  constructor(deps: ReadyPingDeps) {
    this.#deps = deps;
    this.#claimed = deps.store.collection('video_job_pinged', parseMarker);
  }

  /**
   * Pings the member of `task`'s job when every task of it (`jobTasks`, as stored, `task` among them) has
   * ended: when not, the last one to end does it. Nothing when the server turned it off, or another task or
   * worker claimed it. A Discord refusal is logged (the job stays claimed); a store failure is thrown, and
   * the task's step is tried again.
   */
  async announce(task: TaskRecord, jobTasks: readonly TaskRecord[]): Promise<void> {
    if (jobTasks.some(deliveryPending)) return;
    const { ping } = await this.#deps.defaults(task.guildId);
    if (ping === 'off') return;
    const jobId = task.job?.id ?? task.id;
    const { created } = await this.#claimed.setIfAbsent(jobId, true, CLAIM_KEPT_MS);
    if (!created) return;
    const shown = jobTasks.filter((sibling) => sibling.delivery.state === 'posted').length;
    const member = `<@${task.userId}>`;
    const told = shown > 0 ? notice('video.ping.ready', { member, count: shown }) : notice('video.ping.not-made', { member });
    try {
      await this.#post(task, jobTasks, told);
      this.#deps.log.info('told a member their video job ended', { task: task.id, job: jobId, ready: shown > 0 });
    } catch (error) {
      this.#deps.log.warn('could not tell a member their video job ended; not trying again (a ping is sent at most once)', {
        task: task.id,
        job: jobId,
        error,
      });
    }
  }

  async #post(task: TaskRecord, jobTasks: readonly TaskRecord[], told: Notice): Promise<void> {
    const { outbox } = this.#deps;
    const place = task.userInstall;
    if (place) {
      // Where they asked the bot cannot write: their DMs, in their language, replying to the task's card there
      // (the card it went to once its token ended, or the interaction's own when they asked in the bot's DM).
      const channelId = place.dmChannelId ?? (await outbox.openDm(task.userId));
      const cardId = place.dmMessageId ?? (channelId === task.channelId ? task.card.messageId : undefined);
      await this.#reply(channelId, task.userId, word(membersLanguage(task), told), cardId);
      return;
    }
    const cardId = task.card.messageId ?? jobTasks.find((sibling) => sibling.card.messageId !== undefined)?.card.messageId;
    await this.#reply(task.channelId, task.userId, inCardWords(task, told), cardId);
  }

  /** A reply to the card; without Read Message History Discord refuses a reply, and the ping goes without one. */
  async #reply(channelId: string, userId: string, content: string, cardId: string | undefined): Promise<void> {
    const { outbox } = this.#deps;
    try {
      await outbox.pingMember(channelId, userId, content, cardId);
    } catch (error) {
      if (cardId === undefined || !isDiscordError(error, DISCORD_ERRORS.missingPermissions)) throw error;
      await outbox.pingMember(channelId, userId, content);
    }
  }
}
