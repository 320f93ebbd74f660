import type { Attachment, RepliableInteraction } from 'discord.js';
import { DEFAULT_ATTACHMENT_SIZE_LIMIT, type InteractionContext } from '../../ports/interaction-context.ts';
import type { AttachmentInput } from '../../video/requests.ts';
import { scopeOf, userInstallUse } from '../installation.ts';

// The interaction as the video part sees it: who asked, where, through whose install, with which token,
// and the attachments given with it.

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
