import { ApplicationCommandType, ContextMenuCommandBuilder, InteractionContextType } from 'discord.js';
import type { Command } from '../src/interactions/command.ts';
import { localizedName } from '../src/i18n/commands.ts';
import { messageVideoHandlers, type MessageVideoCommand } from '../src/interactions/video/message-commands.ts';
import { SECONDS_TO_ADD } from '../src/interactions/video/video-form.ts';

// Extend video (the Apps menu on a message with an .mp4, anyone's): makes that video longer, as
// `/video extend video:` does.

const command: MessageVideoCommand = {
  name: 'Extend video',
  nameKey: 'command.extend-video.name',
  needs: 'video',
  operation: 'extend',
  form: { title: 'video.form.extend-this-title', seconds: SECONDS_TO_ADD },
};

const data = localizedName(new ContextMenuCommandBuilder().setName(command.name), 'command.extend-video')
  .setType(ApplicationCommandType.Message)
  .setContexts(InteractionContextType.Guild);

export default {
  data,
  ...messageVideoHandlers(command, (services, context, video, form) =>
    services.video.prepare.editOrExtension(context, 'extend', {
      prompt: form.prompt,
      model: undefined,
      duration: form.seconds,
      source: { attachment: video },
    }),
  ),
} satisfies Command;
