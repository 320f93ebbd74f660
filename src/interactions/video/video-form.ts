import { ModalBuilder, TextInputBuilder, TextInputStyle, type ModalSubmitInteraction } from 'discord.js';
import { EXTENSION_DURATION, type DurationRange } from '../../gateway/spec.ts';
import { t, type Locale, type MessageKey } from '../../i18n/index.ts';
import { refuse, type Result } from '../../lib/result.ts';
import { MAX_VARIANTS } from '../../ports/video-defaults.ts';
import type { FormEstimate } from '../../video/plan.ts';
import { formTitle } from '../../video/wording.ts';
import { memberLocale } from '../requirements.ts';
import { FORM_FIELDS, promptField, selectField, selectedValue, textField, uploadField, type UploadField } from './form-fields.ts';

// The form that asks for a video: a prompt, a number of seconds, how many variants and the files it
// needs, as the Extend and Edit buttons, `/video edit` and `extend` without a source, and the message
// commands open it; and what a member filled in.

/** Two digits: every duration the gateway takes. */
const MAX_SECONDS_LENGTH = 2;

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
