import { ApplicationCommandType, ContextMenuCommandBuilder, InteractionContextType } from 'discord.js';
import type { Command } from '../src/interactions/command.ts';
import { localizedName } from '../src/i18n/commands.ts';
import { messageVideoHandlers, type MessageVideoCommand } from '../src/interactions/video/message-commands.ts';

// Edit video (the Apps menu on a message with an .mp4, anyone's): changes that video as the prompt says,
// as `/video edit video:` does.

const command: MessageVideoCommand = {
  name: 'Edit video',
  nameKey: 'command.edit-video.name',
  needs: 'video',
  operation: 'edit',
  form: { title: 'video.form.edit-this-title' },
};

const data = localizedName(new ContextMenuCommandBuilder().setName(command.name), 'command.edit-video')
  .setType(ApplicationCommandType.Message)
  .setContexts(InteractionContextType.Guild);

export default {
  data,
  ...messageVideoHandlers(command, (services, context, video, form) =>
    services.video.prepare.editOrExtension(context, 'edit', {
      prompt: form.prompt,
      model: undefined,
      duration: undefined,
      source: { attachment: video },
    }),
  ),
} satisfies Command;
