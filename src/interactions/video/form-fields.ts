import {
  FileUploadBuilder,
  LabelBuilder,
  StringSelectMenuBuilder,
  StringSelectMenuOptionBuilder,
  TextInputBuilder,
  TextInputStyle,
  type ModalSubmitInteraction,
} from 'discord.js';
import { t, type Locale, type MessageKey } from '../../i18n/index.ts';
import type { AttachmentInput } from '../../video/requests.ts';
import { attachmentInput } from './context.ts';
import { graphemePrefix } from '../../lib/text.ts';

// The fields the video forms are made of (a prompt, a select, a file), and what a submitted form's fields hold.

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

/** A file the form asks for (a label wrapping a file upload): one file, required or not; its words are messages of the catalogs. */
export interface UploadField {
  id: string;
  label: MessageKey;
  description: MessageKey;
  required: boolean;
}

/** A form's label wrapping a text input (Discord's current form; an action row of a text input is the deprecated one). */
export function textField(id: string, label: string, input: TextInputBuilder): LabelBuilder {
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
  if (value) input.setValue(graphemePrefix(value, MAX_PROMPT_LENGTH));
  return textField(FORM_FIELDS.prompt, t(locale, optional ? 'video.form.prompt-optional' : 'video.form.prompt'), input);
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
