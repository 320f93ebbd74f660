import { ApplicationCommandType, ContextMenuCommandBuilder, InteractionContextType } from 'discord.js';
import type { Command } from '../src/interactions/command.ts';
import { localizedName } from '../src/i18n/commands.ts';
import { FORM_FIELDS } from '../src/interactions/video/form-fields.ts';
import { messageVideoHandlers, type MessageVideoCommand } from '../src/interactions/video/message-commands.ts';
import { GENERATION_DURATION } from '../src/gateway/spec.ts';

// Animate image (the Apps menu on a message with a picture, anyone's): a video with that picture as its
// first frame, as `/video generate image:` makes it.

const command: MessageVideoCommand = {
  name: 'Animate image',
  nameKey: 'command.animate-image.name',
  needs: 'image',
  operation: 'generate',
  // As /video generate's `variants`: the select starts at the server's default.
  variants: true,
  form: {
    title: 'video.form.animate-title',
    promptOptional: true,
    seconds: { label: 'video.form.seconds', range: GENERATION_DURATION, serverDefault: true },
    // Checked as /video generate's `last_frame` is: a picture, and a model that takes one.
    uploads: [
      {
        id: FORM_FIELDS.lastFrame,
        label: 'video.form.last-frame',
        description: 'video.form.last-frame.description',
        required: false,
      },
    ],
  },
};

const data = localizedName(new ContextMenuCommandBuilder().setName(command.name), 'command.animate-image')
  .setType(ApplicationCommandType.Message)
  .setContexts(InteractionContextType.Guild);

export default {
  data,
  ...messageVideoHandlers(command, (services, context, image, form) =>
    services.video.prepare.generation(context, {
      prompt: form.prompt || undefined,
      model: undefined,
      duration: form.seconds,
      resolution: undefined,
      aspectRatio: undefined,
      image,
      lastFrame: form.uploads[FORM_FIELDS.lastFrame],
      variants: form.variants,
      referenceImages: [],
      voices: [],
      referenceAudio: undefined,
    }),
  ),
} satisfies Command;
