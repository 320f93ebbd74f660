import {
  FileUploadBuilder,
  LabelBuilder,
  ModalBuilder,
  StringSelectMenuBuilder,
  StringSelectMenuOptionBuilder,
  TextInputBuilder,
  TextInputStyle,
  type Attachment,
  type ButtonInteraction,
  type Message,
  type MessageContextMenuCommandInteraction,
  type ModalSubmitInteraction,
  type RepliableInteraction,
} from 'discord.js';
import { answerPrivately, askPrivately, deferPublicly, replacePrivateMessage } from '../discord/answer.ts';
import { customId, customIdParts } from '../discord/custom-id.ts';
import { EXTENSION_DURATION, type DurationRange, type VideoOperation } from '../gateway/spec.ts';
import { settledWithin } from '../lib/wait-until.ts';
import { refuse, type Result } from '../lib/result.ts';
import { DEFAULT_ATTACHMENT_SIZE_LIMIT, type InteractionContext } from '../ports/interaction-context.ts';
import { MAX_VARIANTS } from '../ports/video-defaults.ts';
import type { Services } from '../services.ts';
import { describeMissingSource, pickImage, pickVideo, type EmbeddedPicture, type MessageMedia } from '../video/message-sources.ts';
import type { FormEstimate, Prepared, SubmissionPlan } from '../video/plan.ts';
import { describeConfirmationClosed, describeConfirmationGone, describeOthersConfirmation, formTitle } from '../video/wording.ts';
import { t, type Locale, type MessageKey } from '../i18n/index.ts';
import type { AttachmentInput } from '../video/requests.ts';
import { settingOptions, shownSettings, type RequestChanges } from '../video/changes.ts';
import type { TaskRecord } from '../video/record.ts';
import { SubmissionRefusedError } from '../video/submit.ts';
import type { Command } from './command.ts';
import { guildOf, memberLocale } from './requirements.ts';
import { scopeOf, userInstallUse } from './installation.ts';

// What the commands that make videos share (/video, its buttons and forms, and the message commands that
// act on a message's picture or video): the interaction as the video part sees it, submitting a prepared
// request behind its status card, and the forms that ask for a prompt and a number of seconds.

/**
 * The fields of a video form, named as /video's options are: a refusal names the field the member must
 * fix as the slash command names its option (`video`, `last_frame`, `image`…).
 */
export const FORM_FIELDS = {
  prompt: 'prompt',
  seconds: 'duration',
  video: 'video',
  lastFrame: 'last_frame',
  image: 'image',
  resolution: 'resolution',
  aspectRatio: 'aspect_ratio',
  variants: 'variants',
} as const;
const MAX_PROMPT_LENGTH = 4000;
/** Two digits: every duration the gateway takes. */
const MAX_SECONDS_LENGTH = 2;

/** An attachment as the video part takes it. */
export function attachmentInput(attachment: Attachment): AttachmentInput {
  return { url: attachment.url, filename: attachment.name, contentType: attachment.contentType ?? undefined, size: attachment.size };
}

/**
 * The interaction's context, made as soon as its handler runs (the dispatcher checked access, a store
 * read): "received" is now to within milliseconds, and its token lives 15 minutes from about then.
 */
export function interactionContext(interaction: RepliableInteraction): InteractionContext {
  if (!interaction.channelId) throw new Error('a video is asked for in a channel');
  const userInstall = userInstallUse(interaction);
  return {
    guildId: scopeOf(interaction),
    ...(userInstall ? { userInstall } : {}),
    channelId: interaction.channelId,
    userId: interaction.user.id,
    applicationId: interaction.applicationId,
    interactionToken: interaction.token,
    interactionReceivedAt: Date.now(),
    attachmentSizeLimit: interaction.attachmentSizeLimit || DEFAULT_ATTACHMENT_SIZE_LIMIT,
    locale: interaction.locale,
    guildLocale: interaction.guildLocale,
  };
}

/**
 * Answers a prepared request: refused at once (ephemeral); held for its member's confirmation when its
 * estimate is over the server's threshold (a private question, nothing sent); or deferred and submitted
 * with a status card. Preparing reads only the local store, so the answer is well within Discord's 3 s;
 * whatever needs the network (Discord, the gateway) comes after the deferral. Every way a member makes a
 * video by hand comes through here: /video generate, edit and extend, the Regenerate button, and the
 * forms of the Extend and Edit buttons and of the message commands.
 */
export async function submitPrepared(
  interaction: RepliableInteraction,
  services: Services,
  context: InteractionContext,
  prepared: Prepared,
): Promise<void> {
  if (!prepared.ok) {
    await answerPrivately(interaction, prepared.message);
    return;
  }
  if (prepared.plan.confirmOverTicks !== undefined) {
    await askToConfirm(interaction, services, context, prepared.plan);
    return;
  }
  await submitPlan(interaction, services, context, prepared.plan);
}

/** Submits a plan behind a public status card; a refusal is told privately. Whether it was submitted. */
async function submitPlan(
  interaction: RepliableInteraction,
  services: Services,
  context: InteractionContext,
  plan: SubmissionPlan,
): Promise<boolean> {
  await deferPublicly(interaction);
  try {
    await services.video.submit(plan, context);
    return true;
  } catch (error) {
    if (!(error instanceof SubmissionRefusedError)) throw error;
    await answerPrivately(interaction, error.message);
    return false;
  }
}

/**
 * Asks the member privately whether to make a video estimated over the server's threshold: the plan is
 * kept first (a quick press must find it), then the question is shown. A public placeholder already shown
 * (the command is slow) is removed by askPrivately, so the question stays the member's.
 */
async function askToConfirm(interaction: RepliableInteraction, services: Services, context: InteractionContext, plan: SubmissionPlan) {
  const confirmations = services.video.confirmations;
  const question = await confirmations.hold(plan, context);
  const messageId = await askPrivately(interaction, question);
  await confirmations.shown(plan.taskId, messageId);
}

/**
 * A press of a held video's Confirm or Cancel button (`video:confirm:<task>`, `video:cancel:<task>`): by
 * its member only. Confirm submits the kept plan behind a public status card, as if it had just been
 * asked for (limits and budgets are checked again then); Cancel sends nothing. Either way the question
 * says how it ended.
 */
export async function answerConfirmation(
  interaction: ButtonInteraction,
  services: Services,
  answer: 'confirm' | 'cancel',
  taskId: string,
): Promise<void> {
  const confirmations = services.video.confirmations;
  const locale = memberLocale(interaction);
  const taken = await confirmations.take(taskId, { guildId: guildOf(interaction), userId: interaction.user.id });
  if (taken.status === 'others') {
    await answerPrivately(interaction, describeOthersConfirmation(locale, taken.userId));
    return;
  }
  if (taken.status === 'gone') {
    await replacePrivateMessage(interaction, describeConfirmationGone(locale));
    return;
  }
  if (answer === 'cancel') {
    await replacePrivateMessage(interaction, describeConfirmationClosed(locale, taken.held.plan, 'cancelled'));
    return;
  }
  const prepared = await confirmations.planOf(taken.held);
  if (!prepared.ok) {
    await answerPrivately(interaction, prepared.message);
    await confirmations.close(taken.held, 'refused');
    return;
  }
  // The card is this press's reply, everyone's to see; the question is edited through its own token.
  const submitted = await submitPlan(interaction, services, interactionContext(interaction), prepared.plan);
  await confirmations.close(taken.held, submitted ? 'confirmed' : 'refused');
}

/**
 * A form's field for a number of seconds: what its label calls it (a message of the catalogs), its range,
 * and whether the default it names is the server's (else the range's).
 */
export interface SecondsField {
  label: MessageKey;
  range: DurationRange;
  serverDefault?: boolean;
}

/** The Extend forms' field: the seconds added to the video. */
export const SECONDS_TO_ADD: SecondsField = { label: 'video.form.seconds-to-add', range: EXTENSION_DURATION };

/** A file the form asks for (a label wrapping a file upload): one file, required or not; its words are messages of the catalogs. */
export interface UploadField {
  id: string;
  label: MessageKey;
  description: MessageKey;
  required: boolean;
}

export interface VideoFormShape {
  id: string;
  /** The form's title, a message of the catalogs. */
  title: MessageKey;
  /** What the video is expected to cost, shown in the title; none when it could not be read in time. */
  estimate?: FormEstimate | undefined;
  /** Whether the prompt may be left empty (a picture to animate says enough by itself). */
  promptOptional?: boolean;
  seconds?: SecondsField;
  /** What the fields show already (a slash command's options given with it). */
  prefill?: { prompt?: string | undefined; seconds?: number | undefined };
  /** A select of how many variants to make (1..MAX_VARIANTS), with `chosen` picked already (the server's default). */
  variants?: { chosen: number };
  /** Files asked for after the text fields; a form holds five fields at most. */
  uploads?: readonly UploadField[];
}

/** The choices of a form's variants select: one video, or a job of several side by side. */
function variantChoices(locale: Locale): { value: string; label: string }[] {
  return Array.from({ length: MAX_VARIANTS }, (_, index) => {
    const count = index + 1;
    return { value: String(count), label: t(locale, 'video.form.variant-choice', { count }) };
  });
}

/** A form's label wrapping a text input (Discord's current form; an action row of a text input is the deprecated one). */
function textField(id: string, label: string, input: TextInputBuilder): LabelBuilder {
  return new LabelBuilder().setLabel(label).setTextInputComponent(input.setCustomId(id));
}

/** A label wrapping a file upload of one file, worded in `locale`. */
export function uploadField(locale: Locale, field: UploadField): LabelBuilder {
  const upload = new FileUploadBuilder()
    .setCustomId(field.id)
    .setMinValues(field.required ? 1 : 0)
    .setMaxValues(1)
    .setRequired(field.required);
  return new LabelBuilder().setLabel(t(locale, field.label)).setDescription(t(locale, field.description)).setFileUploadComponent(upload);
}

/** The prompt's field, with what it shows already. */
export function promptField(locale: Locale, optional: boolean, value?: string): LabelBuilder {
  const input = new TextInputBuilder().setStyle(TextInputStyle.Paragraph).setRequired(!optional).setMaxLength(MAX_PROMPT_LENGTH);
  if (value) input.setValue(value.slice(0, MAX_PROMPT_LENGTH));
  return textField(FORM_FIELDS.prompt, t(locale, optional ? 'video.form.prompt-optional' : 'video.form.prompt'), input);
}

/** A form asking for a prompt, when `seconds` is given a number of seconds, and the files of `uploads`; worded in the member's `locale`. */
export function videoForm(locale: Locale, shape: VideoFormShape): ModalBuilder {
  const modal = new ModalBuilder().setCustomId(shape.id).setTitle(formTitle(locale, t(locale, shape.title), shape.estimate));
  modal.addLabelComponents(promptField(locale, shape.promptOptional ?? false, shape.prefill?.prompt));
  if (shape.seconds) {
    const { label, range, serverDefault } = shape.seconds;
    const seconds = new TextInputBuilder().setStyle(TextInputStyle.Short).setRequired(false).setMaxLength(MAX_SECONDS_LENGTH);
    if (shape.prefill?.seconds !== undefined) seconds.setValue(String(shape.prefill.seconds));
    const wording = t(locale, 'video.form.seconds-range', {
      label: t(locale, label),
      min: range.min,
      max: range.max,
      default: range.default,
      serverDefault: serverDefault ? 'yes' : 'no',
    });
    modal.addLabelComponents(textField(FORM_FIELDS.seconds, wording, seconds));
  }
  if (shape.variants)
    modal.addLabelComponents(
      selectField(FORM_FIELDS.variants, t(locale, 'video.form.variants'), variantChoices(locale), String(shape.variants.chosen)),
    );
  for (const upload of shape.uploads ?? []) modal.addLabelComponents(uploadField(locale, upload));
  return modal;
}

/** A select of a form, in a label, with `chosen` picked already: the member changes it or leaves it. */
export function selectField(id: string, label: string, options: readonly { value: string; label: string }[], chosen: string): LabelBuilder {
  const select = new StringSelectMenuBuilder()
    .setCustomId(id)
    .setMinValues(1)
    .setMaxValues(1)
    .addOptions(
      options.map((option) =>
        new StringSelectMenuOptionBuilder()
          .setValue(option.value)
          .setLabel(option.label)
          .setDefault(option.value === chosen),
      ),
    );
  return new LabelBuilder().setLabel(label).setStringSelectMenuComponent(select);
}

/** The one file uploaded into a form's field, as the video part takes it; undefined when none was. */
export function uploadedFile(interaction: ModalSubmitInteraction, fieldId: string): AttachmentInput | undefined {
  // An optional upload left empty may not come back at all, and discord.js throws for a field that did not.
  if (!interaction.fields.fields.has(fieldId)) return undefined;
  const file = interaction.fields.getUploadedFiles(fieldId, false)?.first();
  return file ? attachmentInput(file) : undefined;
}

/** The value picked in a form's select, when the form has it. */
export function selectedValue(interaction: ModalSubmitInteraction, fieldId: string): string | undefined {
  return interaction.fields.fields.has(fieldId) ? interaction.fields.getStringSelectValues(fieldId)[0] : undefined;
}

/** How long a form waits for its estimate (the server's defaults, from the store) before it is shown without one: Discord's 3 s run from the press. */
const FORM_ESTIMATE_WITHIN_MS = 1_000;

/** What a form's video is expected to cost with the server's defaults, when the store says in time for the form. */
export async function formEstimate(services: Services, guildId: string, operation: VideoOperation): Promise<FormEstimate | undefined> {
  const estimating = services.video.prepare.formEstimate(guildId, operation).catch((error: unknown) => {
    services.log.warn('could not estimate the video of a form; it is shown without its estimate', { error });
    return undefined;
  });
  return settledWithin(estimating, FORM_ESTIMATE_WITHIN_MS);
}

/**
 * How many variants a form's select starts at: the server's default (`/config defaults variants`), or one
 * when the store does not say in time for the form.
 */
async function formVariants(services: Services, guildId: string): Promise<number> {
  const reading = services.video.prepare.defaultVariants(guildId).catch((error: unknown) => {
    services.log.warn("could not read the server's default variants for a form; it starts at one", { error });
    return undefined;
  });
  return (await settledWithin(reading, FORM_ESTIMATE_WITHIN_MS)) ?? 1;
}

/** The number of variants picked in a form's select; undefined when the form has none (or it is not a count). */
export function selectedVariants(interaction: ModalSubmitInteraction): number | undefined {
  const picked = Number(selectedValue(interaction, FORM_FIELDS.variants));
  return Number.isInteger(picked) && picked >= 1 && picked <= MAX_VARIANTS ? picked : undefined;
}

/** What a video form's member typed: the prompt (empty when left out) and the seconds (undefined when left out), or why the seconds will not do (in the member's language). */
export function readVideoForm(
  interaction: ModalSubmitInteraction,
  seconds?: SecondsField,
): Result<{ prompt: string; seconds: number | undefined }> {
  const locale = memberLocale(interaction);
  const prompt = interaction.fields.getTextInputValue(FORM_FIELDS.prompt).trim();
  if (!seconds) return { ok: true, prompt, seconds: undefined };
  const text = interaction.fields.getTextInputValue(FORM_FIELDS.seconds).trim();
  if (text === '') return { ok: true, prompt, seconds: undefined };
  const value = Number(text);
  const { min, max } = seconds.range;
  if (!Number.isInteger(value) || value < min || value > max)
    return refuse(t(locale, 'video.form.seconds-invalid', { label: t(locale, seconds.label), min, max, given: text }));
  return { ok: true, prompt, seconds: value };
}

// ---- Message commands: a video from a message's picture or .mp4 (the Apps menu on a message) -----------

/** A message command that makes a video from what a message carries. */
export interface MessageVideoCommand {
  /** Its name in the Apps menu, also the first part of its form's id. */
  name: string;
  /** Its name in each language (`command.<name>.name`), as the member's Apps menu shows it. */
  nameKey: MessageKey;
  /** What it needs of the message: a picture, or an .mp4. */
  needs: 'image' | 'video';
  /** What it makes of it (its form shows the estimate of that). */
  operation: VideoOperation;
  form: Omit<VideoFormShape, 'id' | 'variants'>;
  /** Whether its form asks how many variants to make (a generation), starting at the server's default. */
  variants?: boolean;
}

/** What a member filled in: the prompt, the seconds, the variants picked, and each upload field's file (by field id) they gave. */
export type FilledVideoForm = {
  prompt: string;
  seconds: number | undefined;
  variants: number | undefined;
  uploads: Partial<Record<string, AttachmentInput>>;
};

/** How a message command's video is prepared, from the source the member picked and what they filled in. */
export type PrepareFromSource = (
  services: Services,
  context: InteractionContext,
  source: AttachmentInput,
  form: FilledVideoForm,
) => Promise<Prepared>;

function embeddedPicture(picture: { url: string; proxyURL?: string } | null): EmbeddedPicture | undefined {
  return picture ? { url: picture.url, proxyUrl: picture.proxyURL } : undefined;
}

/** What a Discord message carries that could become a video's source, as the video part reads it. */
export function messageMedia(message: Message): MessageMedia {
  return {
    attachments: message.attachments.map(attachmentInput),
    embeds: message.embeds.map((embed) => ({
      type: embed.data.type,
      image: embeddedPicture(embed.image),
      thumbnail: embeddedPicture(embed.thumbnail),
    })),
  };
}

/** Picks the message's picture or .mp4 and opens the command's form for it, or tells the member privately what the command needs. */
async function openSourceForm(
  interaction: MessageContextMenuCommandInteraction,
  services: Services,
  command: MessageVideoCommand,
): Promise<void> {
  const media = messageMedia(interaction.targetMessage);
  const source = command.needs === 'image' ? pickImage(media) : pickVideo(media);
  const locale = memberLocale(interaction);
  if (!source) {
    await answerPrivately(interaction, describeMissingSource(locale, t(locale, command.nameKey), command.needs, media));
    return;
  }
  // Kept beside the form rather than before it, so a slow store cannot make the form late; a form whose
  // pick was not kept asks the member to start again when it is submitted.
  const scope = scopeOf(interaction);
  const keeping = services.video.sourceForms
    .keep(interaction.id, { guildId: scope, userId: interaction.user.id, source })
    .catch((error: unknown) => {
      services.log.warn('could not keep the source picked with a message command; its form will ask to start again', {
        command: command.name,
        error,
      });
    });
  const [estimate, variants] = await Promise.all([
    formEstimate(services, scope, command.operation),
    command.variants ? formVariants(services, scope) : undefined,
  ]);
  // Through a member's own install no server's defaults apply: a default the form names is the bot's.
  const seconds =
    command.form.seconds && userInstallUse(interaction) ? { ...command.form.seconds, serverDefault: false } : command.form.seconds;
  await interaction.showModal(
    videoForm(locale, {
      ...command.form,
      ...(seconds ? { seconds } : {}),
      id: customId(command.name, interaction.id),
      estimate,
      ...(variants === undefined ? {} : { variants: { chosen: variants } }),
    }),
  );
  await keeping;
}

/**
 * Submits a message command's form: its source and fields, prepared by the video part (`prepare`) with the
 * same rules, limits and defaults as /video, and followed on a status card.
 */
async function submitSourceForm(
  interaction: ModalSubmitInteraction,
  services: Services,
  command: MessageVideoCommand,
  prepare: PrepareFromSource,
): Promise<void> {
  const formId = customIdParts(interaction.customId)[1] ?? '';
  const source = await services.video.sourceForms.find(formId, scopeOf(interaction), interaction.user.id);
  if (!source) {
    const locale = memberLocale(interaction);
    await answerPrivately(interaction, t(locale, 'video.form.no-longer-open', { command: t(locale, command.nameKey) }));
    return;
  }
  const form = readVideoForm(interaction, command.form.seconds);
  if (!form.ok) {
    await answerPrivately(interaction, form.message);
    return;
  }
  const uploads: FilledVideoForm['uploads'] = {};
  for (const field of command.form.uploads ?? []) uploads[field.id] = uploadedFile(interaction, field.id);
  const context = interactionContext(interaction);
  await submitPrepared(
    interaction,
    services,
    context,
    await prepare(services, context, source, { ...form, variants: selectedVariants(interaction), uploads }),
  );
}

/**
 * The handlers of a message command that makes a video from a message's picture or .mp4: its form
 * (opened at once, within Discord's 3 s), then, when the form is submitted, the server's role rules for
 * /video (read from the store, so only then, as for the Extend and Edit buttons) and the video, prepared
 * by `prepare` and followed on a status card everyone sees.
 */
export function messageVideoHandlers(
  command: MessageVideoCommand,
  prepare: PrepareFromSource,
): Required<Pick<Command, 'requires' | 'answers' | 'messageCommand' | 'modal' | 'userInstall'>> {
  return {
    // Anywhere the member is, through their own install too: the message's picture or .mp4 is all it needs.
    userInstall: () => true,
    requires: (interaction) =>
      interaction.isModalSubmit() ? { feature: 'video', what: (locale) => `**${t(locale, command.nameKey)}**` } : { inServer: true },
    answers: (interaction) => (interaction.isModalSubmit() ? 'public' : 'form'),
    messageCommand: (interaction, services) => openSourceForm(interaction, services, command),
    modal: (interaction, services) => submitSourceForm(interaction, services, command, prepare),
  };
}

// ---- Change and regenerate: a finished task's request, changed in a form and sent again ---------------

/** The form of Change and regenerate, in the member's `locale`: at most five fields, each showing what the task asked for. */
export function changeForm(
  locale: Locale,
  id: string,
  task: Pick<TaskRecord, 'operation' | 'prompt' | 'request'>,
  estimate?: FormEstimate,
): ModalBuilder {
  const shown = shownSettings(task.operation, task.prompt, task.request);
  const options = settingOptions(task.operation, locale);
  const modal = new ModalBuilder().setCustomId(id).setTitle(formTitle(locale, t(locale, 'video.form.change-title'), estimate));
  // A generation from a picture may go without a prompt; the gateway's rules say when (checked on submit).
  modal.addLabelComponents(promptField(locale, task.operation === 'generate', shown.prompt));
  const selects = [
    [
      FORM_FIELDS.seconds,
      task.operation === 'extend' ? 'video.form.seconds-to-add' : 'video.form.length',
      options.duration,
      shown.duration,
    ],
    [FORM_FIELDS.resolution, 'video.form.resolution', options.resolution, shown.resolution],
    [FORM_FIELDS.aspectRatio, 'video.form.aspect-ratio', options.aspectRatio, shown.aspectRatio],
  ] as const;
  for (const [field, label, offered, chosen] of selects) {
    if (offered && chosen !== undefined) modal.addLabelComponents(selectField(field, t(locale, label), offered, chosen));
  }
  if (task.operation === 'generate') {
    modal.addLabelComponents(
      uploadField(locale, {
        id: FORM_FIELDS.image,
        label: 'video.form.new-first-frame',
        description: 'video.form.new-first-frame.description',
        required: false,
      }),
    );
  }
  return modal;
}

/** What a member changed in the Change and regenerate form, as the video part takes it. */
export function readChangeForm(interaction: ModalSubmitInteraction): RequestChanges {
  return {
    prompt: interaction.fields.getTextInputValue(FORM_FIELDS.prompt).trim(),
    duration: selectedValue(interaction, FORM_FIELDS.seconds),
    resolution: selectedValue(interaction, FORM_FIELDS.resolution),
    aspectRatio: selectedValue(interaction, FORM_FIELDS.aspectRatio),
    image: uploadedFile(interaction, FORM_FIELDS.image),
  };
}
