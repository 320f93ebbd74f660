import {
  InteractionContextType,
  SlashCommandBuilder,
  type Attachment,
  type AutocompleteInteraction,
  type ChatInputCommandInteraction,
  type ModalSubmitInteraction,
} from 'discord.js';
import { answerPrivately, type AnswerVisibility } from '../src/discord/answer.ts';
import { describeRecentTasks, withCurrentPlaces } from '../src/interactions/video/task-list.ts';
import type { Command } from '../src/interactions/command.ts';
import { literalChoice, localized, localizedChoice } from '../src/i18n/commands.ts';
import { answerUsage } from '../src/interactions/usage-answer.ts';
import { memberLocale, type HandledInteraction, type Requirement } from '../src/interactions/requirements.ts';
import { scopeOf, userInstallUse } from '../src/interactions/installation.ts';
import { t } from '../src/i18n/index.ts';
import { MAX_AUTOCOMPLETE_CHOICES, containing, suggest, type Choice } from '../src/discord/autocomplete.ts';
import {
  ASPECT_RATIOS,
  BUILT_IN_VOICES,
  EDIT_MAX_SECONDS,
  EXTENSION_DURATION,
  GENERATION_DURATION,
  MAX_REFERENCE_AUDIOS,
  MAX_REFERENCE_AUDIO_SECONDS,
  RESOLUTIONS,
} from '../src/gateway/spec.ts';
import type { Services } from '../src/services.ts';
import { MAX_VARIANTS } from '../src/ports/video-defaults.ts';
import type { AttachmentInput } from '../src/video/requests.ts';
import { parseVoiceList } from '../src/video/requests.ts';
import { parseUploadFormId } from '../src/video/actions.ts';
import { attachmentInput as fromAttachment, interactionContext } from '../src/interactions/video/context.ts';
import { submitPrepared } from '../src/interactions/video/submission.ts';
import { opensUploadForm, openUploadForm, submitUploadForm } from '../src/interactions/video/upload-forms.ts';
import { cardButtonOf, pressCardButton, submitCardButtonForm } from '../src/interactions/video/card-buttons.ts';

/** How many of a member's tasks `/video list` shows. */
const RECENT_LISTED = 10;

/** A choice per whole second of `range`, worded "5 seconds" in each language. */
const durationChoices = (range: { min: number; max: number }) =>
  Array.from({ length: range.max - range.min + 1 }, (_, index) => {
    const seconds = range.min + index;
    return localizedChoice(seconds, 'command.choice.seconds', { seconds });
  });

const GENERATE = 'command.video.generate';
const EDIT = 'command.video.edit';
const EXTEND = 'command.video.extend';

// Names are the code's (interactions carry them); descriptions and every other language are the catalogs'
// (`command.video.*` in src/i18n/catalogs/).
const data = localized(new SlashCommandBuilder().setName('video'), 'command.video')
  .setContexts(InteractionContextType.Guild)
  .addSubcommand((sub) =>
    localized(sub.setName('generate'), GENERATE)
      .addStringOption((option) => localized(option.setName('prompt'), `${GENERATE}.prompt`).setRequired(true).setMaxLength(4000))
      .addStringOption((option) => localized(option.setName('model'), `${GENERATE}.model`).setAutocomplete(true))
      .addIntegerOption((option) =>
        localized(option.setName('duration'), `${GENERATE}.duration`).addChoices(...durationChoices(GENERATION_DURATION)),
      )
      .addStringOption((option) =>
        localized(option.setName('resolution'), `${GENERATE}.resolution`).addChoices(...RESOLUTIONS.map(literalChoice)),
      )
      .addStringOption((option) =>
        localized(option.setName('aspect_ratio'), `${GENERATE}.aspect_ratio`).addChoices(...ASPECT_RATIOS.map(literalChoice)),
      )
      .addIntegerOption((option) => localized(option.setName('variants'), `${GENERATE}.variants`).setMinValue(1).setMaxValue(MAX_VARIANTS))
      .addAttachmentOption((option) => localized(option.setName('image'), `${GENERATE}.image`))
      .addAttachmentOption((option) => localized(option.setName('last_frame'), `${GENERATE}.last_frame`))
      .addAttachmentOption((option) => localized(option.setName('reference_image'), `${GENERATE}.reference_image`))
      .addAttachmentOption((option) => localized(option.setName('reference_image_2'), `${GENERATE}.reference_image_2`))
      .addAttachmentOption((option) => localized(option.setName('reference_image_3'), `${GENERATE}.reference_image_3`))
      .addStringOption((option) => localized(option.setName('voice'), `${GENERATE}.voice`).setAutocomplete(true))
      .addAttachmentOption((option) =>
        localized(option.setName('reference_audio'), `${GENERATE}.reference_audio`, { seconds: MAX_REFERENCE_AUDIO_SECONDS }),
      ),
  )
  .addSubcommand((sub) =>
    localized(sub.setName('edit'), EDIT)
      .addStringOption((option) => localized(option.setName('prompt'), `${EDIT}.prompt`).setRequired(true).setMaxLength(4000))
      .addAttachmentOption((option) => localized(option.setName('video'), `${EDIT}.video`, { seconds: EDIT_MAX_SECONDS }))
      .addStringOption((option) => localized(option.setName('task'), `${EDIT}.task`).setAutocomplete(true))
      .addStringOption((option) => localized(option.setName('model'), `${EDIT}.model`).setAutocomplete(true)),
  )
  .addSubcommand((sub) =>
    localized(sub.setName('extend'), EXTEND)
      .addStringOption((option) => localized(option.setName('prompt'), `${EXTEND}.prompt`).setRequired(true).setMaxLength(4000))
      .addIntegerOption((option) =>
        localized(option.setName('duration'), `${EXTEND}.duration`).addChoices(...durationChoices(EXTENSION_DURATION)),
      )
      .addAttachmentOption((option) => localized(option.setName('video'), `${EXTEND}.video`))
      .addStringOption((option) => localized(option.setName('task'), `${EXTEND}.task`).setAutocomplete(true))
      .addStringOption((option) => localized(option.setName('model'), `${EXTEND}.model`).setAutocomplete(true)),
  )
  .addSubcommand((sub) =>
    localized(sub.setName('status'), 'command.video.status').addStringOption((option) =>
      localized(option.setName('task'), 'command.video.status.task').setRequired(true).setAutocomplete(true),
    ),
  )
  .addSubcommand((sub) => localized(sub.setName('list'), 'command.video.list'))
  .addSubcommand((sub) => localized(sub.setName('usage'), 'command.video.usage'));

function attachmentInput(attachment: Attachment | null): AttachmentInput | undefined {
  return attachment ? fromAttachment(attachment) : undefined;
}

async function generate(interaction: ChatInputCommandInteraction, services: Services) {
  const options = interaction.options;
  const context = interactionContext(interaction);
  const referenceImages = ['reference_image', 'reference_image_2', 'reference_image_3']
    .map((name) => attachmentInput(options.getAttachment(name)))
    .filter((attachment) => attachment !== undefined);
  const prepared = await services.video.prepare.generation(context, {
    prompt: options.getString('prompt') ?? undefined,
    model: options.getString('model') ?? undefined,
    duration: options.getInteger('duration') ?? undefined,
    resolution: options.getString('resolution') ?? undefined,
    aspectRatio: options.getString('aspect_ratio') ?? undefined,
    variants: options.getInteger('variants') ?? undefined,
    image: attachmentInput(options.getAttachment('image')),
    lastFrame: attachmentInput(options.getAttachment('last_frame')),
    referenceImages,
    voices: parseVoiceList(options.getString('voice') ?? undefined),
    referenceAudio: attachmentInput(options.getAttachment('reference_audio')),
  });
  await submitPrepared(interaction, services, context, prepared);
}

async function editOrExtend(interaction: ChatInputCommandInteraction, services: Services, operation: 'edit' | 'extend') {
  const options = interaction.options;
  const video = attachmentInput(options.getAttachment('video'));
  const taskRef = options.getString('task') ?? undefined;
  if (!video && !taskRef) {
    await openUploadForm(interaction, services, operation);
    return;
  }
  if (video && taskRef) {
    await answerPrivately(interaction, t(memberLocale(interaction), 'video.refusal.one-source'));
    return;
  }
  const context = interactionContext(interaction);
  const prepared = await services.video.prepare.editOrExtension(context, operation, {
    prompt: options.getString('prompt', true),
    model: options.getString('model') ?? undefined,
    duration: options.getInteger('duration') ?? undefined,
    source: video ? { attachment: video } : { taskRef: taskRef ?? '' },
  });
  await submitPrepared(interaction, services, context, prepared);
}

async function status(interaction: ChatInputCommandInteraction, services: Services) {
  const ref = interaction.options.getString('task', true);
  const locale = memberLocale(interaction);
  const task = await services.video.tasks.findInGuild(scopeOf(interaction), ref);
  if (!task) {
    // Through their own install, only the tasks made through it are looked in: there is no server.
    await answerPrivately(interaction, t(locale, userInstallUse(interaction) ? 'user-install.no-task' : 'video.refusal.no-task', { ref }));
    return;
  }
  // A waiting task's place as its line has it now, not as its card last showed it.
  const [current = task] = await withCurrentPlaces([task], (waiting) => services.video.sender.currentPlace(waiting));
  await answerPrivately(interaction, { card: await services.video.privateCard(current, { locale }) });
}

async function list(interaction: ChatInputCommandInteraction, services: Services) {
  const locale = memberLocale(interaction);
  const tasks = await services.video.tasks.recentForUser(scopeOf(interaction), interaction.user.id, RECENT_LISTED);
  if (tasks.length === 0) {
    await answerPrivately(interaction, t(locale, userInstallUse(interaction) ? 'user-install.list.none' : 'video.list.none'));
    return;
  }
  const listed = await withCurrentPlaces(tasks, (task) => services.video.sender.currentPlace(task));
  await answerPrivately(interaction, describeRecentTasks(locale, listed));
}

async function autocomplete(interaction: AutocompleteInteraction, services: Services) {
  const focused = interaction.options.getFocused(true);
  const typed = focused.value.toLowerCase();
  let choices: Choice[] = [];
  if (focused.name === 'model') {
    choices = containing(await services.models.suggested(scopeOf(interaction), 'video'), typed);
  } else if (focused.name === 'voice') {
    const chosen = parseVoiceList(focused.value);
    const endsWithSeparator = /[\s,]$/.test(focused.value) || focused.value === '';
    const done = endsWithSeparator ? chosen : chosen.slice(0, -1);
    const partial = endsWithSeparator ? '' : (chosen.at(-1) ?? '');
    if (done.length < MAX_REFERENCE_AUDIOS) {
      choices = BUILT_IN_VOICES.filter((voice) => voice.startsWith(partial) && !done.includes(voice)).map((voice) => {
        const value = [...done, voice].join(', ');
        return { name: value, value };
      });
    }
  } else if (focused.name === 'task') {
    const tasks = await services.video.tasks.recentForUser(scopeOf(interaction), interaction.user.id, MAX_AUTOCOMPLETE_CHOICES);
    // Edits and extensions need a finished video; /video status takes any task.
    const needsVideo = interaction.options.getSubcommand(false) !== 'status';
    choices = tasks
      .filter((task) => !needsVideo || (task.state === 'succeeded' && !task.outcome.moderated))
      .filter((task) => task.id.includes(typed) || task.prompt.toLowerCase().includes(typed) || (task.gatewayId ?? '').includes(typed))
      .map((task) => ({
        name: t(memberLocale(interaction), 'video.autocomplete.task', { state: task.state, prompt: task.prompt || task.operation }),
        value: task.id,
      }));
  }
  await suggest(interaction, choices);
}

async function modal(interaction: ModalSubmitInteraction, services: Services) {
  const upload = parseUploadFormId(interaction.customId);
  if (upload) return submitUploadForm(interaction, services, upload.operation, upload.model);
  return submitCardButtonForm(interaction, services);
}

/** What /video decides about a subcommand: what the member needs, how it is first answered, whether a member's own install may use it, and its handler. */
interface Subcommand {
  requires: Requirement;
  answers: AnswerVisibility;
  userInstall: boolean;
  run(interaction: ChatInputCommandInteraction, services: Services): Promise<void>;
}

/** Making a video follows the server's role rules, in the channels it keeps videos to, and its status card is everyone's. */
const MAKES_A_VIDEO = { requires: { feature: 'video', channelsOf: 'video' }, answers: 'public' } as const;

/**
 * Looking at tasks needs only the server, as does the usage report (a member's own; the server's for
 * admins); the answer is the member's. They too are kept to the server's video channels: issue 36 keeps
 * `/video` there, and a member sent there sees their videos where they are posted.
 */
const LOOKS_AT_TASKS = { requires: { inServer: true, channelsOf: 'video' }, answers: 'private' } as const;

/**
 * Through a member's own install: making a video, and looking at their own. Edit and extend need the
 * server's install (the Edit video and Extend video message commands take a message's .mp4 anywhere).
 */
const SUBCOMMANDS = new Map<string, Subcommand>([
  ['generate', { ...MAKES_A_VIDEO, userInstall: true, run: generate }],
  ['edit', { ...MAKES_A_VIDEO, userInstall: false, run: (interaction, services) => editOrExtend(interaction, services, 'edit') }],
  ['extend', { ...MAKES_A_VIDEO, userInstall: false, run: (interaction, services) => editOrExtend(interaction, services, 'extend') }],
  ['status', { ...LOOKS_AT_TASKS, userInstall: true, run: status }],
  ['list', { ...LOOKS_AT_TASKS, userInstall: true, run: list }],
  ['usage', { ...LOOKS_AT_TASKS, userInstall: true, run: answerUsage }],
]);

function subcommandOf(interaction: ChatInputCommandInteraction): Subcommand {
  const name = interaction.options.getSubcommand();
  const subcommand = SUBCOMMANDS.get(name);
  if (!subcommand) throw new Error(`unknown /video subcommand ${name}`);
  return subcommand;
}

async function execute(interaction: ChatInputCommandInteraction, services: Services) {
  await subcommandOf(interaction).run(interaction, services);
}

/**
 * Each subcommand and each button under a video (src/interactions/video/card-buttons.ts) says what it
 * needs; a form's submission makes a video: an upload form's where the member ran the command, a card
 * button's where the card is (in any channel).
 */
function requires(interaction: HandledInteraction): Requirement {
  if (interaction.isButton()) return cardButtonOf(interaction.customId).requires;
  if (interaction.isModalSubmit())
    return parseUploadFormId(interaction.customId) ? { feature: 'video', channelsOf: 'video' } : { feature: 'video' };
  if (!interaction.isChatInputCommand()) return { feature: 'video' };
  // A form must come at once: its submission is checked for the role rules instead (the channel, when the store answers in time).
  if (opensUploadForm(interaction)) return { inServer: true, channelsOf: 'video' };
  return subcommandOf(interaction).requires;
}

/** Whether this works through a member's own install of the app: each subcommand and each button under a video says. */
function userInstall(interaction: HandledInteraction): boolean {
  if (interaction.isButton()) return cardButtonOf(interaction.customId).userInstall;
  return interaction.isChatInputCommand() && (SUBCOMMANDS.get(interaction.options.getSubcommand(false) ?? '')?.userInstall ?? false);
}

/** Each subcommand and each button under a video says, but `/video edit` and `extend` without a source open a form; a form's submission shows a status card. */
function answers(interaction: HandledInteraction): AnswerVisibility | 'form' {
  if (interaction.isButton()) return cardButtonOf(interaction.customId).answers;
  if (!interaction.isChatInputCommand()) return 'public';
  if (opensUploadForm(interaction)) return 'form';
  return subcommandOf(interaction).answers;
}

export default { data, requires, answers, userInstall, execute, autocomplete, button: pressCardButton, modal } satisfies Command;
