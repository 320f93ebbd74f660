import type { DiscordOutbox } from '../discord/outbox.ts';
import type { Logger } from '../lib/log.ts';
import { DEFAULT_ATTACHMENT_SIZE_LIMIT, type InteractionContext } from '../ports/interaction-context.ts';
import type { VoiceCaller, VoiceMember, VoiceToolOutcome, VoiceVideoRequest, VoiceVideoRequests } from '../ports/voice-video.ts';
import type { ModerationLogPort } from '../ports/moderation-log.ts';
import type { VideoPreparation } from './prepare.ts';
import { jobEstimateUsdTicks, jobSize, type SubmissionPlan } from './plan.ts';
import type { TaskRecord } from './record.ts';
import type { TaskRepository } from './repository.ts';
import { SubmissionRefusedError } from './submit.ts';
import { formatEstimate } from '../wording/cost.ts';
import { inChannelWords, voiceRequestCard } from './status-card.ts';
import { graphemePrefix } from '../lib/text.ts';
import { notice, type Notice, type Outcome } from '../wording/notice.ts';

// /video generate and /video status for a member who asked by voice: the same preparation, role rules,
// limits, key and defaults as the command, and the same card (a channel message here, since there is
// no interaction to answer), with the outcome in words the voice model can say. A request several
// members spoke goes as far as the most restricted of them may: one the moderators deny, or (to make a
// video) one without the video role, refuses it for all.

export interface VoiceVideoDeps {
  prepare: VideoPreparation;
  submit(plan: SubmissionPlan, context: InteractionContext): Promise<TaskRecord>;
  tasks: TaskRepository;
  outbox: Pick<DiscordOutbox, 'postCard'>;
  /** The server's role rules for /video, as the dispatcher applies them to the command. */
  mayUseVideo(guildId: string, member: VoiceMember): Promise<Outcome>;
  /** The members the server's moderators refuse every use of the bot (/config rules); default none. */
  deniedMembers?(guildId: string): Promise<readonly string[]>;
  /**
   * What the server adds to the context of a request made by voice: its language, which the video's card
   * and what the member hears are worded in (default English).
   */
  serverContext?: (guildId: string) => Partial<InteractionContext>;
  /**
   * Where a waiting task stands in its key's line now (QueueSender.currentPlace); default the place its
   * record last stored.
   */
  currentPlace?: (task: TaskRecord) => Promise<number | undefined>;
  /** Each server's moderation log, told of a request refused by a rule, a limit or a budget; default none. */
  moderationLog?: Pick<ModerationLogPort, 'refused'>;
  log: Logger;
}

const ORDINALS = new Intl.PluralRules('en', { type: 'ordinal' });
const ORDINAL_SUFFIXES: Readonly<Record<Intl.LDMLPluralRule, string>> = {
  zero: 'th',
  one: 'st',
  two: 'nd',
  few: 'rd',
  many: 'th',
  other: 'th',
};

/** "in line", with the place when known: "2nd in line" (the model reads English, as every output here is). */
function inLine(place: number | undefined): string {
  return place === undefined ? 'in line' : `${place}${ORDINAL_SUFFIXES[ORDINALS.select(place)]} in line`;
}

/** Where the task stands, in words the model can say: a waiting one with its place, a cancelled one with who took it out of line. */
function describeState(task: TaskRecord, place: number | undefined): string {
  switch (task.state) {
    case 'waiting':
      return `is queued, ${inLine(place)} for this server's key: it starts when the key has a free slot`;
    case 'cancelled': {
      const by = task.cancelledBy === undefined || task.cancelledBy === task.userId ? 'the member who asked for it' : 'a server manager';
      return `was cancelled by ${by} before it was sent, so nothing was made or charged`;
    }
    case 'running':
      return task.progress === undefined ? 'is running' : `is running, ${Math.round(task.progress)}% done`;
    default:
      return `is ${task.state}`;
  }
}

function describeTask(task: TaskRecord, place: number | undefined): string {
  const posted = task.delivery.state === 'posted' ? ' The video is posted in the text channel.' : '';
  return `Task ${task.id} ("${graphemePrefix(task.prompt, 80)}") ${describeState(task, place)}.${posted}`;
}

/** A member as the model is told of them: their name, which it can say, and their mention. */
function named(member: VoiceMember): string | Notice {
  const mention = `<@${member.userId}>`;
  return member.displayName === undefined ? mention : notice('video.voice.named', { name: member.displayName, mention });
}

/**
 * A refusal in the words the voice model is told: a blocked word says plainly that the server's rules
 * refused the request, naming the word (the model has no `prompt` option to point at); any other as /video says it.
 */
export function spokenRefusal(why: Notice): Notice {
  if (why.key === 'video.refusal.blocked-word' || why.key === 'video.refusal.blocked-word-again')
    return notice('video.voice.blocked-word', { word: why.values.word });
  return why;
}

export class VoiceVideo implements VoiceVideoRequests {
  readonly #deps: VoiceVideoDeps;

  constructor(deps: VoiceVideoDeps) {
    this.#deps = deps;
  }

  async generate(caller: VoiceCaller, request: VoiceVideoRequest): Promise<VoiceToolOutcome> {
    const { prepare, outbox, log } = this.#deps;
    const context: InteractionContext = {
      ...this.#serverContext(caller.guildId),
      guildId: caller.guildId,
      channelId: caller.channelId,
      userId: caller.userId,
      applicationId: '',
      interactionToken: '',
      interactionReceivedAt: Date.now(),
      attachmentSizeLimit: DEFAULT_ATTACHMENT_SIZE_LIMIT,
    };
    const refusal = (await this.#denied(caller)) ?? (await this.#withoutVideoAccess(caller));
    if (refusal) return this.#refused(caller, request.prompt, context, refusal);
    const prepared = await prepare.generation(context, {
      prompt: request.prompt,
      model: undefined,
      duration: request.duration,
      resolution: request.resolution,
      aspectRatio: request.aspectRatio,
      variants: request.variants,
      image: undefined,
      lastFrame: undefined,
      referenceImages: [],
      voices: [],
      referenceAudio: undefined,
    });
    if (!prepared.ok) return this.#refused(caller, request.prompt, context, spokenRefusal(prepared.notice));
    // A video over the server's confirmation threshold (`confirmOverUsdTicks`) is not held here: a member
    // talking to the voice model has no button to press. It goes ahead like any other, within the limits
    // and budgets, and the model is told its estimate to say aloud.
    // What the whole job is expected to cost: a job of variants is that many videos.
    const estimate = formatEstimate(jobEstimateUsdTicks(prepared.plan));
    const size = jobSize(prepared.plan);
    let cardMessageId: string;
    try {
      cardMessageId = (await outbox.postCard(caller.channelId, voiceRequestCard(caller.userId, context))).messageId;
    } catch (error) {
      log.warn('could not post the card of a video asked for by voice', { guild: caller.guildId, channel: caller.channelId, error });
      return { status: 'failed', message: 'I could not post in the text channel, so I did not start the video.' };
    }
    try {
      const task = await this.#deps.submit(prepared.plan, { ...context, cardMessageId });
      if (task.state === 'unknown')
        return {
          status: 'failed',
          message: `The gateway did not answer clearly; task ${task.id} may or may not have started. Its card in the text channel says more.`,
          task: task.id,
        };
      if (task.state === 'waiting') {
        const place = await this.#placeOf(task);
        const queued =
          size > 1 ? `${size} variants of the video are queued, the first ${inLine(place)}` : `The video is queued, ${inLine(place)}`;
        return {
          status: 'queued',
          message: `${queued} for this server's key, for ${estimate}: task ${task.id}. It starts when the key has a free slot; its card in the text channel shows its place, and the video follows there when it is ready.`,
          task: task.id,
          ...(place === undefined ? {} : { place }),
        };
      }
      return {
        status: 'submitted',
        message:
          size > 1
            ? `${size} variants of the video are being made, for ${estimate}: task ${task.id}. Their card is in the text channel, and the videos follow there when they are ready.`
            : `The video is being made, for ${estimate}: task ${task.id}. Its card is in the text channel, and the video follows there when it is ready.`,
        task: task.id,
      };
    } catch (error) {
      if (error instanceof SubmissionRefusedError) return this.#refused(caller, request.prompt, context, error.notice);
      log.error('a video asked for by voice failed', { guild: caller.guildId, error });
      return { status: 'failed', message: 'Something went wrong while starting the video; nothing was made.' };
    }
  }

  /** A refusal as the model hears it, told to the server's moderation log too (which keeps those by a rule, a limit or a budget). */
  #refused(caller: VoiceCaller, prompt: string | undefined, context: Partial<InteractionContext>, why: Notice): VoiceToolOutcome {
    this.#deps.moderationLog?.refused({
      guildId: caller.guildId,
      userId: caller.userId,
      what: 'voice-tool',
      why,
      ...(prompt === undefined ? {} : { prompt }),
    });
    return { status: 'refused', message: inChannelWords(context, why) };
  }

  async status(caller: VoiceCaller, taskRef: string | undefined): Promise<VoiceToolOutcome> {
    const { tasks } = this.#deps;
    const denied = await this.#denied(caller);
    if (denied) return this.#refused(caller, undefined, this.#serverContext(caller.guildId), denied);
    const task =
      taskRef === undefined
        ? (await tasks.recentForUser(caller.guildId, caller.userId, 1))[0]
        : await tasks.findInGuild(caller.guildId, taskRef);
    if (!task) {
      return {
        status: 'not_found',
        message: taskRef === undefined ? 'You have no videos on this server yet.' : `There is no task ${taskRef} on this server.`,
      };
    }
    return { status: 'found', message: describeTask(task, await this.#placeOf(task)), task: task.id };
  }

  /** No member's language comes with a voice request: what they hear and the card are the server's. */
  #serverContext(guildId: string): Partial<InteractionContext> {
    return this.#deps.serverContext?.(guildId) ?? {};
  }

  /** Why the request is refused when the moderators deny a member who spoke it; undefined when they deny none. */
  async #denied(caller: VoiceCaller): Promise<Notice | undefined> {
    const denied = new Set((await this.#deps.deniedMembers?.(caller.guildId)) ?? []);
    const member = [caller, ...caller.alsoHeard].find(({ userId }) => denied.has(userId));
    return member && notice('video.voice.member-denied', { member: named(member) });
  }

  /**
   * Why no video is made when a member who spoke the request may not make one: the caller in /video's own
   * words, another member named; undefined when all of them may.
   */
  async #withoutVideoAccess(caller: VoiceCaller): Promise<Notice | undefined> {
    const own = await this.#deps.mayUseVideo(caller.guildId, caller);
    if (!own.ok) return own.notice;
    for (const member of caller.alsoHeard) {
      const access = await this.#deps.mayUseVideo(caller.guildId, member);
      if (!access.ok) return notice('video.voice.member-may-not', { member: named(member), why: access.notice });
    }
    return undefined;
  }

  /** A waiting task's place in its key's line as it stands now, else as its record last stored it. */
  async #placeOf(task: TaskRecord): Promise<number | undefined> {
    if (task.state !== 'waiting') return undefined;
    return this.#deps.currentPlace ? this.#deps.currentPlace(task) : task.place;
  }
}
