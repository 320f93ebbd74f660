import {
  InteractionContextType,
  SlashCommandBuilder,
  type Attachment,
  type AutocompleteInteraction,
  type ButtonInteraction,
  type ChatInputCommandInteraction,
  type ModalSubmitInteraction,
} from 'discord.js';
import { answerPrivately, type Placeholder } from '../src/discord/answer.ts';
import type { Command } from '../src/interactions/command.ts';
import { literalChoice, localized, localizedChoice } from '../src/i18n/commands.ts';
import { answerUsage } from '../src/interactions/usage-answer.ts';
import { guildOf, memberLocale, type HandledInteraction, type Requirement } from '../src/interactions/requirements.ts';
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
import { parseUploadFormId, parseVideoActionId, uploadFormId, videoActionId } from '../src/video/actions.ts';
import { settledWithin } from '../src/lib/wait-until.ts';
import { attachmentInput as fromAttachment, interactionContext } from '../src/interactions/video/context.ts';
import { submitPrepared } from '../src/interactions/video/submission.ts';
import { answerConfirmation } from '../src/interactions/video/confirmation.ts';
import { FORM_FIELDS, uploadedFile } from '../src/interactions/video/form-fields.ts';
import { SECONDS_TO_ADD, readVideoForm, videoForm } from '../src/interactions/video/video-form.ts';
import { formEstimate } from '../src/interactions/video/form-defaults.ts';
import { changeForm, readChangeForm } from '../src/interactions/video/change-form.ts';

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

/**
 * Making a video (a subcommand, a form) follows the server's role rules; looking at tasks needs only the
 * server, as does the usage report (a member's own; the server's for admins). The Extend and Edit buttons open a form, which must come at once:
 * the form's submission is checked instead (and who may press them, see pressRefusal()).
 */
function requires(interaction: HandledInteraction): Requirement {
  if (interaction.isButton()) {
    const action = parseVideoActionId(interaction.customId)?.action;
    // Confirming a held video makes it: the role rules apply again at the press.
    return action === 'regenerate' || action === 'vary' || action === 'confirm' ? { feature: 'video' } : { inServer: true };
  }
  if (!interaction.isChatInputCommand()) return { feature: 'video' };
  const subcommand = interaction.options.getSubcommand();
  if (subcommand === 'status' || subcommand === 'list' || subcommand === 'usage') return { inServer: true };
  // A form must come at once: its submission is checked instead.
  if (opensUploadForm(interaction)) return { inServer: true };
  return { feature: 'video' };
}

/** Whether this is `/video edit` or `/video extend` given no source: it opens a form that takes the `.mp4`. */
function opensUploadForm(interaction: ChatInputCommandInteraction): boolean {
  const subcommand = interaction.options.getSubcommand(false);
  const { options } = interaction;
  return (subcommand === 'edit' || subcommand === 'extend') && !options.getAttachment('video') && !options.getString('task');
}

/** The longest model name an upload form's id carries (custom ids are at most 100 characters). */
const MAX_MODEL_IN_FORM_ID = 64;

/** The `.mp4` a form asks for, checked as the `video` option is. */
const VIDEO_UPLOAD = {
  id: FORM_FIELDS.video,
  label: 'video.form.video-upload',
  description: 'video.form.video-upload.description',
  required: true,
} as const;

/** `/video edit` or `/video extend` without a source: a form with the prompt (and seconds) given, and the `.mp4` to upload. */
async function openUploadForm(interaction: ChatInputCommandInteraction, services: Services, operation: 'edit' | 'extend') {
  const options = interaction.options;
  const locale = memberLocale(interaction);
  const model = options.getString('model') ?? undefined;
  if (model !== undefined && model.length > MAX_MODEL_IN_FORM_ID) {
    await answerPrivately(interaction, t(locale, 'video.refusal.not-a-model', { model: model.slice(0, MAX_MODEL_IN_FORM_ID) }));
    return;
  }
  const estimate = await formEstimate(services, guildOf(interaction), operation);
  await interaction.showModal(
    videoForm(locale, {
      id: uploadFormId(operation, model),
      title: operation === 'extend' ? 'video.form.extend-title' : 'video.form.edit-title',
      estimate,
      ...(operation === 'extend' ? { seconds: SECONDS_TO_ADD } : {}),
      prefill: { prompt: options.getString('prompt') ?? undefined, seconds: options.getInteger('duration') ?? undefined },
      uploads: [VIDEO_UPLOAD],
    }),
  );
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
  await answerPrivately(interaction, { card: await services.video.privateCard(task, locale) });
}

async function list(interaction: ChatInputCommandInteraction, services: Services) {
  const locale = memberLocale(interaction);
  const tasks = await services.video.tasks.recentForUser(scopeOf(interaction), interaction.user.id, RECENT_LISTED);
  if (tasks.length === 0) {
    await answerPrivately(interaction, t(locale, userInstallUse(interaction) ? 'user-install.list.none' : 'video.list.none'));
    return;
  }
  const lines = tasks.map((task) => {
    const when = `<t:${Math.floor(task.createdAt / 1000)}:R>`;
    const shown = task.state === 'running' && task.progress !== undefined;
    const progress = Math.round(task.progress ?? 0) / 100;
    const prompt = task.prompt.length > 60 ? `${task.prompt.slice(0, 59)}…` : task.prompt;
    const values = { ref: task.id, state: task.state, progress, shown: shown ? 'yes' : 'no', operation: task.operation, when, prompt };
    return t(locale, 'video.list.line', values);
  });
  await answerPrivately(interaction, t(locale, 'video.list', { lines: lines.join('\n') }));
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

/** How long a press of Extend or Edit waits to hear whether the member may press it, before its form is shown anyway: Discord's 3 s run from the press. */
const PRESS_CHECK_MS = 1_000;

/**
 * Why this member may not press a button under this video (the server keeps them to the member who made
 * it), when the store says so in time for the form; the form's submission is checked in any case.
 */
async function pressRefusal(interaction: ButtonInteraction, services: Services, taskId: string): Promise<string | undefined> {
  const checking = services.video.prepare
    .buttonAccess(
      { guildId: guildOf(interaction), userId: interaction.user.id, locale: interaction.locale, guildLocale: interaction.guildLocale },
      taskId,
    )
    .catch((error: unknown) => {
      services.log.warn('could not check who may press a video button; its form is shown, and checked when submitted', { error });
      return undefined;
    });
  const verdict = await settledWithin(checking, PRESS_CHECK_MS);
  return verdict && !verdict.ok ? verdict.message : undefined;
}

async function button(interaction: ButtonInteraction, services: Services) {
  const { action, taskId } = parseVideoActionId(interaction.customId) ?? {};
  if (!taskId) throw new Error(`malformed video button ${interaction.customId}`);
  const opensForm = action === 'extend' || action === 'edit';
  // Both are store reads, each bounded so the form still comes within Discord's 3 s.
  const locale = memberLocale(interaction);
  const [refused, estimate] = opensForm
    ? await Promise.all([pressRefusal(interaction, services, taskId), formEstimate(services, guildOf(interaction), action)])
    : [undefined, undefined];
  if (refused !== undefined) {
    await answerPrivately(interaction, refused);
  } else if (action === 'change') {
    await openChangeForm(interaction, services, taskId);
  } else if (action === 'extend') {
    await interaction.showModal(
      videoForm(locale, {
        id: videoActionId('extend-modal', taskId),
        title: 'video.form.extend-this-title',
        seconds: SECONDS_TO_ADD,
        estimate,
      }),
    );
  } else if (action === 'edit') {
    await interaction.showModal(
      videoForm(locale, { id: videoActionId('edit-modal', taskId), title: 'video.form.edit-this-title', estimate }),
    );
  } else if (action === 'confirm' || action === 'cancel') {
    await answerConfirmation(interaction, services, action, taskId);
  } else if (action === 'regenerate') {
    const context = interactionContext(interaction);
    await submitPrepared(interaction, services, context, await services.video.prepare.regeneration(context, taskId));
  } else if (action === 'vary') {
    // A variant's prompt and settings again, as a new job of one, with its video's first frame as the
    // image when the gateway takes one for the request; else as it was, its card saying why. Fetching and
    // decoding the video takes a second or so: the dispatcher has deferred the answer meanwhile.
    const context = interactionContext(interaction);
    await submitPrepared(interaction, services, context, await services.video.vary(context, taskId));
  } else {
    throw new Error(`unknown video button ${interaction.customId}`);
  }
}

/** How long a press of Change and regenerate waits for the task it shows: Discord's 3 s run from the press. */
const CHANGE_FORM_WITHIN_MS = 1_500;

/**
 * Change and regenerate: a form showing what the task asked for, to change and send again with the same
 * model. It needs the task itself, so unlike Extend and Edit it is not shown when the store is too slow.
 */
async function openChangeForm(interaction: ButtonInteraction, services: Services, taskId: string) {
  const guildId = guildOf(interaction);
  const locale = memberLocale(interaction);
  const presser = { guildId, userId: interaction.user.id, locale: interaction.locale, guildLocale: interaction.guildLocale };
  // The task is read once: the form shows it, and who may press its buttons is checked against it.
  const reading = services.video.tasks
    .findInGuild(guildId, taskId)
    .then(async (task) => [task, task ? await services.video.prepare.mayPress(presser, task) : ({ ok: true } as const)] as const)
    .catch((error: unknown) => {
      services.log.warn('could not read the task of a Change and regenerate press', { error });
      return undefined;
    });
  const read = await settledWithin(reading, CHANGE_FORM_WITHIN_MS);
  if (!read) {
    await answerPrivately(interaction, t(locale, 'video.refusal.change-unreadable'));
    return;
  }
  const [task, access] = read;
  if (!access.ok) await answerPrivately(interaction, access.message);
  else if (!task) await answerPrivately(interaction, t(locale, 'video.refusal.task-unknown'));
  else await interaction.showModal(changeForm(locale, videoActionId('change-modal', taskId), task));
}

/** The form of `/video edit` or `/video extend` given no source: the uploaded `.mp4`, checked as the `video` option is. */
async function submitUploadForm(
  interaction: ModalSubmitInteraction,
  services: Services,
  operation: 'edit' | 'extend',
  model: string | undefined,
) {
  const form = readVideoForm(interaction, operation === 'extend' ? SECONDS_TO_ADD : undefined);
  if (!form.ok) {
    await answerPrivately(interaction, form.message);
    return;
  }
  const video = uploadedFile(interaction, FORM_FIELDS.video);
  if (!video) {
    await answerPrivately(interaction, t(memberLocale(interaction), 'video.refusal.upload-the-mp4', { operation }));
    return;
  }
  const context = interactionContext(interaction);
  const prepared = await services.video.prepare.editOrExtension(context, operation, {
    prompt: form.prompt,
    model,
    duration: form.seconds,
    source: { attachment: video },
  });
  await submitPrepared(interaction, services, context, prepared);
}

async function modal(interaction: ModalSubmitInteraction, services: Services) {
  const upload = parseUploadFormId(interaction.customId);
  if (upload) return submitUploadForm(interaction, services, upload.operation, upload.model);
  const { action, taskId } = parseVideoActionId(interaction.customId) ?? {};
  if (taskId && action === 'change-modal') {
    const context = interactionContext(interaction);
    await submitPrepared(
      interaction,
      services,
      context,
      await services.video.prepare.regeneration(context, taskId, readChangeForm(interaction)),
    );
    return;
  }
  if (!taskId || (action !== 'extend-modal' && action !== 'edit-modal')) throw new Error(`unknown video modal ${interaction.customId}`);
  const form = readVideoForm(interaction, action === 'extend-modal' ? SECONDS_TO_ADD : undefined);
  if (!form.ok) {
    await answerPrivately(interaction, form.message);
    return;
  }
  const context = interactionContext(interaction);
  const prepared = await services.video.prepare.editOrExtension(context, action === 'extend-modal' ? 'extend' : 'edit', {
    prompt: form.prompt,
    model: undefined,
    duration: form.seconds,
    source: { taskRef: taskId, byButton: true },
  });
  await submitPrepared(interaction, services, context, prepared);
}

async function execute(interaction: ChatInputCommandInteraction, services: Services) {
  switch (interaction.options.getSubcommand()) {
    case 'generate':
      return generate(interaction, services);
    case 'edit':
      return editOrExtend(interaction, services, 'edit');
    case 'extend':
      return editOrExtend(interaction, services, 'extend');
    case 'status':
      return status(interaction, services);
    case 'list':
      return list(interaction, services);
    case 'usage':
      return answerUsage(interaction, services);
    default:
      throw new Error(`unknown /video subcommand ${interaction.options.getSubcommand()}`);
  }
}

/** What works through a member's own install of the app: making a video, and looking at their own; the rest needs the server's install. */
const USER_INSTALL_SUBCOMMANDS = new Set(['generate', 'status', 'list', 'usage']);

/**
 * Through a member's own install: /video generate, status, list and usage. Edit and extend need the
 * server's install (the Edit video and Extend video message commands take a message's .mp4 anywhere),
 * and so do the buttons under a video, which a card made through a member's install does not carry.
 */
function userInstall(interaction: HandledInteraction): boolean {
  return interaction.isChatInputCommand() && USER_INSTALL_SUBCOMMANDS.has(interaction.options.getSubcommand(false) ?? '');
}

/**
 * A status card everyone sees for what makes a video (Regenerate, and the confirm button of a held video);
 * a form for Extend and Edit; a private answer otherwise (Cancel replaces its member's private question).
 */
function answers(interaction: HandledInteraction): Placeholder | 'form' {
  if (interaction.isButton()) {
    const action = parseVideoActionId(interaction.customId)?.action;
    if (action === 'regenerate' || action === 'vary' || action === 'confirm') return 'public';
    return action === 'cancel' ? 'private' : 'form';
  }
  if (!interaction.isChatInputCommand()) return 'public';
  if (opensUploadForm(interaction)) return 'form';
  const subcommand = interaction.options.getSubcommand();
  return subcommand === 'generate' || subcommand === 'edit' || subcommand === 'extend' ? 'public' : 'private';
}

export default { data, requires, answers, userInstall, execute, autocomplete, button, modal } satisfies Command;
