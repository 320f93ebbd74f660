import { ApplicationCommandType, ContextMenuCommandBuilder, InteractionContextType } from 'discord.js';
import type { Command } from '../src/interactions/command.ts';
import { localizedName } from '../src/i18n/commands.ts';
import { messageVideoHandlers, type MessageVideoCommand } from '../src/interactions/video-commands.ts';
import { GENERATION_DURATION } from '../src/gateway/spec.ts';

// Animate image (the Apps menu on a message with a picture, anyone's): a video with that picture as its
// first frame, as `/video generate image:` makes it.

const command: MessageVideoCommand = {
  name: 'Animate image',
  needs: 'image',
  operation: 'generate',
  form: {
    title: 'Animate this image',
    promptOptional: true,
    seconds: { label: 'Seconds', range: GENERATION_DURATION, defaultText: "the server's" },
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
      lastFrame: undefined,
      referenceImages: [],
      voices: [],
      referenceAudio: undefined,
    }),
  ),
} satisfies Command;
